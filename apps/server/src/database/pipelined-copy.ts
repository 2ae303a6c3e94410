import type pg from 'pg';

/** CopyData's and CopyDone's type bytes in PostgreSQL's wire protocol. */
const COPY_DATA = 0x64; // 'd'
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]); // 'c', length 4

/** What of pg's connection a COPY sent whole needs: the socket and the simple query it writes. */
interface Connection {
  stream: { cork(): void; uncork(): void; write(bytes: Uint8Array): boolean };
  query(text: string): void;
}

/**
 * `COPY … FROM STDIN` with every byte it sends known beforehand, sent as one write: the statement,
 * each buffer as a CopyData message, CopyDone. PostgreSQL reads the data once the statement has
 * put it in copy mode, so nothing needs to wait for its CopyInResponse; pg-copy-streams' `from`
 * does wait (a round trip), and then writes each message's 5-byte header and its bytes apart and
 * CopyDone after them: a COPY of one row took 7 writes to the socket, each of which woke the
 * database's process to read a few bytes (bench:ingest-request, docs/benchmarks.md). If the statement
 * fails before copy mode (no such table, a lock not granted) or while copying (a bad row),
 * PostgreSQL answers with the error and drops the CopyData and CopyDone still coming, as its
 * protocol says, so the connection is ready for the next statement (a ROLLBACK) either way.
 *
 * Resolves with the number of rows copied; rejects with PostgreSQL's error.
 */
export function copyBuffersInto(
  client: pg.ClientBase,
  sql: string,
  buffers: readonly Uint8Array[],
): Promise<number> {
  return new Promise((resolve, reject) => {
    void client.query(new WholeCopy(sql, buffers, resolve, reject) as unknown as pg.QueryConfig);
  });
}

/** A Submittable in pg's sense: pg hands it the connection when its turn comes, and its answers. */
class WholeCopy {
  private rows = 0;

  constructor(
    private readonly sql: string,
    private readonly buffers: readonly Uint8Array[],
    private readonly resolve: (rows: number) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  submit(connection: Connection): void {
    const socket = connection.stream;
    socket.cork();
    try {
      connection.query(this.sql);
      for (const bytes of this.buffers) {
        if (bytes.length === 0) continue;
        const header = Buffer.allocUnsafe(5);
        header[0] = COPY_DATA;
        header.writeUInt32BE(bytes.length + 4, 1);
        socket.write(header);
        socket.write(bytes);
      }
      socket.write(COPY_DONE);
    } finally {
      socket.uncork();
    }
  }

  /** The data went with the statement: nothing is left to send. */
  handleCopyInResponse(): void {}

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '');
    if (match) this.rows = Number(match[1]);
  }

  handleReadyForQuery(): void {
    this.callback();
    this.resolve(this.rows);
  }

  /** pg calls this on PostgreSQL's error (and then no longer counts this as its active query), or a lost connection. */
  handleError(error: Error): void {
    this.callback();
    this.reject(error);
  }

  /**
   * Called once the COPY is over either way. pg replaces it, when a `query_timeout` is set (the
   * connection string may set one), with what clears that timeout's timer: left running, it would
   * fire after the COPY and act on the connection's next statement.
   */
  callback(): void {}

  // A COPY FROM answers with none of these; pg calls them only if the statement was something else.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}
