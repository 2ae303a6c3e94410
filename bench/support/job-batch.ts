import type pg from 'pg';
import { gql } from '../../test/support/test-server';
import { scrapeMetrics } from './server-metrics';

/** The iterations each process has estimated under `method`, from its /metrics. */
export async function estimatedIterations(url: string, method: string): Promise<number> {
  return (
    (await scrapeMetrics(url)).get(`creditlab_estimator_seconds_count{method="${method}"}`) ?? 0
  );
}

export interface JobBatchResult {
  jobs: number;
  iterations: number;
  seconds: number;
  /** Iterations each worker estimated (its /metrics, before and after). */
  perWorker: number[];
  /** Jobs completed with every iteration done and stored once. */
  completed: number;
  /** Queue turns (pg-boss jobs) taken, and how many were taken again after a start (retries). */
  turns: number;
  turnsRetried: number;
}

async function waitForJobs(pool: pg.Pool, ids: string[]): Promise<void> {
  for (;;) {
    const res = await pool.query<{ open: string; bad: string }>(
      `SELECT count(*) FILTER (WHERE status IN ('queued', 'running')) AS open,
              count(*) FILTER (WHERE status IN ('failed', 'cancelled')) AS bad
       FROM recompute_jobs WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    const row = res.rows[0] as { open: string; bad: string };
    if (Number(row.bad) > 0) throw new Error(`${row.bad} recompute jobs failed`);
    if (Number(row.open) === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Jobs completed, each with as many fresh stored iterations as it asked for, no more, no fewer. */
async function completedOnce(pool: pg.Pool, ids: string[]): Promise<number> {
  const res = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM recompute_jobs j
     WHERE j.id = ANY($1::uuid[]) AND j.status = 'completed' AND j.done = cardinality(j.iterations)
       AND (SELECT count(*) FROM advantage_set_iterations a
            WHERE a.run_id = j.run_id AND a.set_id = j.set_id) = cardinality(j.iterations)`,
    [ids],
  );
  return Number(res.rows[0]?.n);
}

async function queueTurns(
  pool: pg.Pool,
  ids: string[],
): Promise<{ turns: number; retried: number }> {
  const res = await pool.query<{ turns: string; retried: string }>(
    `SELECT count(*) AS turns, count(*) FILTER (WHERE retry_count > 0) AS retried
     FROM (SELECT data, retry_count FROM pgboss.job WHERE name = 'recompute'
           UNION ALL SELECT data, retry_count FROM pgboss.archive WHERE name = 'recompute') t
     WHERE t.data->>'jobId' = ANY($1::text[])`,
    [ids],
  );
  return { turns: Number(res.rows[0]?.turns), retried: Number(res.rows[0]?.retried) };
}

/**
 * Queues one recompute job per run through `apiUrl` (a process that takes no jobs) and waits
 * until `workerUrls` have done them all; then checks in the database and the workers' metrics
 * that every job was done, and every iteration estimated, exactly once.
 */
export async function runJobBatch(
  pool: pg.Pool,
  apiUrl: string,
  workerUrls: string[],
  runIds: string[],
  method: { name: string; params: Record<string, unknown> },
): Promise<JobBatchResult> {
  const before = await Promise.all(workerUrls.map((u) => estimatedIterations(u, method.name)));
  const t0 = performance.now();
  const jobs: { id: string; total: number }[] = [];
  for (const r of runIds) {
    const res = await gql<{ recompute: { id: string; total: number } }>(
      { url: apiUrl },
      'mutation($r: ID!, $m: MethodInput!) { recompute(runId: $r, method: $m) { id total } }',
      { r, m: method },
    );
    if (!res.data) throw new Error(`recompute: ${JSON.stringify(res.errors)}`);
    jobs.push(res.data.recompute);
  }
  const ids = jobs.map((j) => j.id);
  await waitForJobs(pool, ids);
  const seconds = (performance.now() - t0) / 1000;
  const after = await Promise.all(workerUrls.map((u) => estimatedIterations(u, method.name)));
  const { turns, retried } = await queueTurns(pool, ids);
  return {
    jobs: jobs.length,
    iterations: jobs.reduce((n, j) => n + j.total, 0),
    seconds,
    perWorker: after.map((a, k) => a - (before[k] as number)),
    completed: await completedOnce(pool, ids),
    turns,
    turnsRetried: retried,
  };
}
