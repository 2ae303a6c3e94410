import type pg from 'pg';
import { sendPipelined } from './pipeline';

/**
 * `COPY … FROM STDIN` with every byte it sends known beforehand, sent as one write: the statement,
 * each buffer as a CopyData message, CopyDone (a pipeline of one step, pipeline.ts). pg-copy-streams'
 * `from` waits for PostgreSQL to enter copy mode (a round trip), then writes each message's 5-byte
 * header and its bytes apart and CopyDone after them: a COPY of one row took 7 writes to the socket,
 * each of which woke the database's process to read a few bytes (bench:ingest-request,
 * docs/benchmarks.md). If the statement fails before copy mode (no such table, a lock not granted)
 * or while copying (a bad row), PostgreSQL answers with the error and drops the data still coming,
 * so the connection is ready for the next statement (a ROLLBACK) either way.
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
