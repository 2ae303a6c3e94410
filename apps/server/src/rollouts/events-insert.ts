import type pg from 'pg';

/** One event's row of the log (`events`), as the INSERT takes it. */
export interface EventRow {
  seq: number;
  id: string;
  type: string;
  iteration: number | null;
  /** The data as stored, JSON text. */
  data: string;
  stepCount: number;
  /** The event's digest (SHA-256). */
  hash: Buffer;
  /** Its steps as the log keeps them (step-bearing events), else null. */
  body: Buffer | null;
}

/** The SHA-256 event digest's size. */
const HASH_BYTES = 32;

/** The same INSERT for ingest and for bench:ingest-database, which measures it alone. */
const INSERT_EVENTS_SQL = `INSERT INTO events (run_id, seq, id, type, iteration, data, step_count, body_hash, body, recorded_at)
       SELECT $1, u.seq, u.id, u.type, u.iteration, u.data, u.step_count,
              substring($11::bytea FROM (u.n::int - 1) * ${HASH_BYTES} + 1 FOR ${HASH_BYTES}),
              CASE WHEN u.body_length >= 0 THEN substring($10::bytea FROM u.body_from FOR u.body_length) END,
              $12
       FROM unnest($2::bigint[], $3::uuid[], $4::text[], $5::int[], $6::jsonb[], $7::int[],
                   $8::int[], $9::int[])
            WITH ORDINALITY AS u(seq, id, type, iteration, data, step_count, body_from, body_length, n)`;

/**
 * Writes events to a run's log in one statement, all recorded at `recordedAt`. Bodies and hashes
 * go as two binary parameters cut apart in SQL: an array of bytea would travel as hex text that
 * PostgreSQL parses back, which costs more than the rest of the insert.
 */
export async function insertEvents(
  client: pg.PoolClient,
  runId: string,
  rows: EventRow[],
  recordedAt: Date,
): Promise<void> {
  if (rows.length > 0) await client.query(eventsInsert(runId, rows, recordedAt));
}

/** The statement `insertEvents` sends, built now (ingest sends it later, after the chunk before). */
export function eventsInsert(runId: string, rows: EventRow[], recordedAt: Date): pg.QueryConfig {
  const bodies = packBodies(rows.map((r) => r.body));
  return {
    text: INSERT_EVENTS_SQL,
    values: [
      runId,
      rows.map((r) => r.seq),
      rows.map((r) => r.id),
      rows.map((r) => r.type),
      rows.map((r) => r.iteration),
      rows.map((r) => r.data),
      rows.map((r) => r.stepCount),
      bodies.from,
      bodies.length,
      bodies.bytes,
      Buffer.concat(rows.map((r) => r.hash)),
      recordedAt,
    ],
  };
}

/**
 * The events' bodies end to end, with each one's 1-based start and length (−1 for an event
 * without a body), for one binary parameter.
 */
function packBodies(bodies: (Buffer | null)[]): {
  bytes: Buffer;
  from: number[];
  length: number[];
} {
  const from: number[] = [];
  const length: number[] = [];
  let at = 1;
  for (const body of bodies) {
    from.push(at);
    length.push(body === null ? -1 : body.length);
    at += body?.length ?? 0;
  }
  return { bytes: Buffer.concat(bodies.filter((b): b is Buffer => b !== null)), from, length };
}
