import type pg from 'pg';

// pg's own conversion of a parameter to what it sends (arrays as literals, dates, JSON, Buffers as
// binary), which its Query applies; it is not in pg's typings.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { prepareValue } = require('pg/lib/utils') as { prepareValue: (value: unknown) => unknown };

/** `COPY … FROM STDIN` with every byte it sends known beforehand. */
export interface CopyStep {
  copy: string;
  buffers: readonly Uint8Array[];
}

/**
 * A statement, bound to `name` if that statement is prepared on the connection already
 * (repeated-statements.ts), else parsed unnamed here. Rows it returns are not kept.
 */
export interface StatementStep {
  statement: pg.QueryConfig;
  name?: string;
}

export type PipelineStep = CopyStep | StatementStep;

/** CopyData's and CopyDone's type bytes in PostgreSQL's wire protocol. */
const COPY_DATA = 0x64; // 'd'
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]); // 'c', length 4

/** What of pg's connection a pipeline needs: the socket and the messages it writes. */
interface Connection {
  stream: { cork(): void; uncork(): void; write(bytes: Uint8Array): boolean };
  parse(query: { text: string; name?: string }): void;
  bind(config: { statement?: string; values?: unknown[] }): void;
  execute(config: { portal?: string; rows?: number }): void;
  sync(): void;
}

/**
 * Sends the steps, in order, as one write to PostgreSQL's socket and one round trip: each by the
 * extended query protocol (a COPY's rows and CopyDone right after its Execute, without waiting for
 * its CopyInResponse: PostgreSQL reads them once the COPY has put it in copy mode), then one Sync.
 * Before, each statement and COPY of an append was a round trip of its own that the request waited
 * for (a write that wakes the database's process, its answer, a turn of the event loop), so the
 * last chunk of an append with its COMMIT took three (docs/benchmarks.md).
 *
 * If a step fails, PostgreSQL answers with the error and skips every message up to the Sync, the
 * rows of a COPY still coming included (its protocol says so), so nothing after the failed step
 * runs, the transaction is left failed for the caller's ROLLBACK, and the connection is ready for it.
 *
 * Resolves with the rows each step wrote or returned (its CommandComplete's count); rejects with
 * PostgreSQL's first error.
 */
export function sendPipelined(
  client: pg.ClientBase,
  steps: readonly PipelineStep[],
): Promise<number[]> {
  if (steps.length === 0) return Promise.resolve([]);
  let values: unknown[][];
  try {
    // pg's conversion can throw (a value it cannot send): before anything is written, not halfway.
    values = steps.map((s) => ('copy' in s ? [] : (s.statement.values ?? []).map(prepareValue)));
  } catch (e) {
    return Promise.reject(e as Error);
  }
  return new Promise((resolve, reject) => {
    void client.query(new Pipeline(steps, values, resolve, reject) as unknown as pg.QueryConfig);
  });
}

/** A Submittable in pg's sense: pg hands it the connection when its turn comes, and its answers. */
class Pipeline {
  private readonly rows: number[] = [];
  private failed = false;

  constructor(
    private readonly steps: readonly PipelineStep[],
    private readonly values: unknown[][],
    private readonly resolve: (rows: number[]) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  submit(connection: Connection): void {
    const socket = connection.stream;
    socket.cork();
    try {
      this.steps.forEach((step, k) => {
        if ('copy' in step) {
          connection.parse({ text: step.copy });
          connection.bind({});
          connection.execute({});
          writeCopyData(socket, step.buffers);
          return;
        }
        if (!step.name) connection.parse({ text: step.statement.text });
        connection.bind({ statement: step.name, values: this.values[k] });
        connection.execute({});
      });
      connection.sync();
    } finally {
      socket.uncork();
    }
  }

  /** The rows went with the statement: nothing is left to send. */
  handleCopyInResponse(): void {}

  handleCommandComplete(message: { text?: string }): void {
    const count = /(\d+)$/.exec(message.text ?? '');
    this.rows.push(count ? Number(count[1]) : 0);
  }

  handleReadyForQuery(): void {
    this.callback();
    if (!this.failed) this.resolve(this.rows);
  }

  /**
   * pg calls this on PostgreSQL's error (and then no longer counts this as its active query: the
   * ReadyForQuery after the Sync reaches no one), or a lost connection.
   */
  handleError(error: Error): void {
    this.failed = true;
    this.callback();
    this.reject(error);
  }

  /**
   * Called once the pipeline is over either way. pg replaces it, when a `query_timeout` is set (the
   * connection string may set one), with what clears that timeout's timer: left running, it would
   * fire later and act on the connection's next statement.
   */
  callback(): void {}

  // Rows a statement returns are not kept; a pipeline is not paged.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Each buffer as a CopyData message, then CopyDone, into the (corked) socket. */
export function writeCopyData(socket: Connection['stream'], buffers: readonly Uint8Array[]): void {
  for (const bytes of buffers) {
    if (bytes.length === 0) continue;
    const header = Buffer.allocUnsafe(5);
    header[0] = COPY_DATA;
    header.writeUInt32BE(bytes.length + 4, 1);
    socket.write(header);
    socket.write(bytes);
  }
  socket.write(COPY_DONE);
}
