import type pg from 'pg';
import type { RunSummary } from './run-projector';

/**
 * Locks a run's row for the transaction (appenders to one run take turns, so seqs are gap-free)
 * and reads its summary and the transaction's time; undefined if there is no such run.
 */
export async function lockRun(
  client: pg.PoolClient,
  runId: string,
): Promise<{ run: RunSummary; now: Date } | undefined> {
  const res = await client.query<{
    last_seq: string;
    last_iteration: number | null;
    embedding_dim: number | null;
    status: RunSummary['status'];
    summary: Record<string, unknown> | null;
    finished_at: Date | null;
    now: Date;
  }>(
    `SELECT last_seq, last_iteration, embedding_dim, status, summary, finished_at, now() AS now
     FROM runs WHERE id = $1 FOR UPDATE`,
    [runId],
  );
  const r = res.rows[0];
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
