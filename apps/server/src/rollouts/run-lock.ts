import type pg from 'pg';
import { isUuid } from '../database/uuid';
import type { RunSummary } from './run-projector';

interface LockedRow {
  last_seq: string;
  last_iteration: number | null;
  embedding_dim: number | null;
  status: RunSummary['status'];
  summary: Record<string, unknown> | null;
  finished_at: Date | null;
  now: Date;
}

export interface LockedRun {
  run: RunSummary;
  now: Date;
}

const LOCK_SQL = (run: string) =>
  `SELECT last_seq, last_iteration, embedding_dim, status, summary, finished_at, now() AS now
   FROM runs WHERE id = ${run} FOR UPDATE`;

/**
 * Locks a run's row for the transaction (appenders to one run take turns, so seqs are gap-free)
 * and reads its summary and the transaction's time; undefined if there is no such run.
 */
export async function lockRun(
  client: pg.PoolClient,
  runId: string,
): Promise<LockedRun | undefined> {
  const res = await client.query<LockedRow>(LOCK_SQL('$1'), [runId]);
  return lockedRun(res.rows[0]);
}

/**
 * BEGIN and lockRun in one message (the simple protocol, which takes several statements but no
 * parameters: the run id is checked and inlined), so that the transaction begins and the run is
 * locked in one round trip, while the server checks the request's first event; with `also` (a
 * statement with its values inlined: first-event-lookup.ts), run once the run is locked, whose rows
 * come back with the lock's.
 */
export async function beginLockAndAsk<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  runId: string,
  also?: string,
): Promise<{ locked: LockedRun | undefined; rows: R[] }> {
  if (!isUuid(runId)) throw new Error(`not a run id: ${runId}`);
  const results = (await client.query(
    `BEGIN; ${LOCK_SQL(`'${runId}'`)}${also ? `; ${also}` : ''}`,
  )) as unknown as pg.QueryResult[];
  return {
    locked: lockedRun((results[1] as pg.QueryResult<LockedRow> | undefined)?.rows[0]),
    rows: (results[2]?.rows ?? []) as R[],
  };
}

function lockedRun(r: LockedRow | undefined): LockedRun | undefined {
  if (!r) return undefined;
  return {
    now: r.now,
    run: {
      lastSeq: Number(r.last_seq),
      lastIteration: r.last_iteration,
      embeddingDim: r.embedding_dim,
      status: r.status,
      summary: r.summary,
      finishedAt: r.finished_at,
    },
  };
}
