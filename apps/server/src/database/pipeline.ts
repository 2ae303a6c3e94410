import { serialize } from 'pg-protocol';
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

/** CopyData's type byte in PostgreSQL's wire protocol. */
const COPY_DATA = 0x64; // 'd'

/** What of pg's connection a pipeline needs: its socket. */
interface Connection {
  stream: { writable: boolean; cork(): void; uncork(): void; write(bytes: Uint8Array): boolean };
}

/**
 * Sends the steps, in order, as one write to PostgreSQL's socket and one round trip: each by the
 * extended query protocol (a COPY's rows and CopyDone right after its Execute, without waiting for
 * its CopyInResponse: PostgreSQL reads them once the COPY has put it in copy mode), then one Sync.
 * Before, each statement and COPY of an append was a round trip of its own that the request waited
 * for (a write that wakes the database's process, its answer, a turn of the event loop).
 *
 * If a step fails, PostgreSQL answers with the error and skips every message up to the Sync, the
 * rows of a COPY still coming included (its protocol says so), so nothing after the failed step
 * runs, the transaction is left failed for the caller's ROLLBACK, and the connection is ready for it.
 *
 * Resolves with each step's command tag (`COPY 2`, `INSERT 0 1`, `COMMIT`: a COMMIT of a failed
 * transaction answers `ROLLBACK`); rejects with PostgreSQL's first error, or pg's if the values
 * cannot be sent (then nothing is).
 */
export function sendPipelined(
  client: pg.ClientBase,
  steps: readonly PipelineStep[],
): Promise<string[]> {
  if (steps.length === 0) return Promise.resolve([]);
  let messages: Uint8Array[];
  try {
    messages = [...steps.flatMap(messagesOf), serialize.sync()];
  } catch (e) {
    return Promise.reject(e as Error);
  }
  return new Promise((resolve, reject) => {
    void client.query(new Pipeline(messages, resolve, reject) as unknown as pg.QueryConfig);
  });
}

/**
 * `COPY … FROM STDIN` with every byte it sends known beforehand, as a pipeline of its own: the
 * statement, each buffer as a CopyData message and CopyDone in one write. pg-copy-streams' `from`
 * waits for PostgreSQL to enter copy mode (a round trip), then writes each message's 5-byte header
 * and its bytes apart: a COPY of one row took 7 writes to the socket, each of which woke the
 * database's process to read a few bytes (bench:ingest-request, docs/benchmarks.md).
 *
 * Resolves with the number of rows copied; rejects with PostgreSQL's error.
 */
export async function copyBuffersInto(
  client: pg.ClientBase,
  sql: string,
  buffers: readonly Uint8Array[],
): Promise<number> {
  const [tag = ''] = await sendPipelined(client, [{ copy: sql, buffers }]);
  return Number(/^COPY (\d+)$/.exec(tag)?.[1] ?? 0);
}

/** A step's messages, built before anything is sent (pg's conversion of a value may throw). */
function messagesOf(step: PipelineStep): Uint8Array[] {
  if ('copy' in step)
    return [
      serialize.parse({ text: step.copy }),
      serialize.bind(),
      serialize.execute(),
      ...step.buffers
        .filter((b) => b.length > 0)
        .flatMap((bytes) => [copyDataHeader(bytes), bytes]),
      serialize.copyDone(),
    ];
  const { statement, name } = step;
  return [
    ...(name ? [] : [serialize.parse({ text: statement.text })]),
    serialize.bind({
      statement: name,
      values: (statement.values ?? []).map(prepareValue) as (string | Buffer | null)[],
    }),
    serialize.execute(),
  ];
}

/** A CopyData message's type and length, sent before its bytes (which are not copied). */
function copyDataHeader(bytes: Uint8Array): Buffer {
  const header = Buffer.allocUnsafe(5);
  header[0] = COPY_DATA;
  header.writeUInt32BE(bytes.length + 4, 1);
  return header;
}

/** A Submittable in pg's sense: pg hands it the connection when its turn comes, and its answers. */
class Pipeline {
  private readonly tags: string[] = [];

  constructor(
    private readonly messages: readonly Uint8Array[],
    private readonly resolve: (tags: string[]) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  /** Returns an error rather than throwing: pg then fails this query alone, and goes on. */
  submit(connection: Connection): Error | null {
    const socket = connection.stream;
    if (!socket.writable) return new Error('the connection to PostgreSQL is closed');
    socket.cork();
    try {
      for (const message of this.messages) socket.write(message);
    } finally {
      socket.uncork();
    }
    return null;
  }

  /** The rows went with the statement: nothing is left to send. */
  handleCopyInResponse(): void {}

  handleCommandComplete(message: { text?: string }): void {
    this.tags.push(message.text ?? '');
  }

  handleReadyForQuery(): void {
    this.callback();
    this.resolve(this.tags);
  }

  /**
   * pg calls this on PostgreSQL's error (and then no longer counts this as its active query: the
   * ReadyForQuery after the Sync reaches no one), or a lost connection.
   */
  handleError(error: Error): void {
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
