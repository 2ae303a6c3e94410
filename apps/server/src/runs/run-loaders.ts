import DataLoader from 'dataloader';
import type { Reader } from '../database/database';
import type { EventType } from '../graphql/enums';
import { EVALUATION_SUCCESS, TRAINING_SUCCESS } from '../rollouts/iteration-tally';
import type { Iteration, RunEvent } from './run.models';

export type RunRow = Awaited<ReturnType<Reader['prisma']['run']['findFirst']>> & object;

export interface EventPageKey {
  runId: string;
  afterSeq: number;
  types: string[] | null;
  limit: number;
}

/** Per-request batch loaders of runs' iterations, events and lineage: one statement per field, for every run asked. */
export function createRunLoaders(reader: Reader) {
  const pool = reader.pool;
  return {
    /** Runs by id (a parent is always in its child's project: forks are confined to it). */
    runs: new DataLoader<string, RunRow | undefined>(async (ids) => {
      const rows = await reader.prisma.run.findMany({ where: { id: { in: [...ids] } } });
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => byId.get(id));
    }),

    /** Forks and retrains of each run, oldest first (in the parent's project, as forks are). */
    children: new DataLoader<string, RunRow[]>(async (ids) => {
      const rows = await reader.prisma.run.findMany({
        where: { parentRunId: { in: [...ids] } },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      });
      return ids.map((id) => rows.filter((r) => r.parentRunId === id));
    }),

    /**
     * What a list of runs shows of each beside its row: the latest training success (metric
     * successRate), the latest held-out success, and how many iterations hold rollouts.
     */
    latest: new DataLoader<
      string,
      { training: number | null; evaluation: number | null; rolloutIterations: number }
    >(async (ids) => {
      const res = await pool.query<{
        run_id: string;
        training: number | null;
        evaluation: number | null;
        rollout_iterations: number;
      }>(
        `SELECT r.id AS run_id,
                (SELECT value FROM run_metrics m WHERE m.run_id = r.id AND m.name = $2) AS training,
                (SELECT value FROM run_metrics m WHERE m.run_id = r.id AND m.name = $3) AS evaluation,
                (SELECT count(*)::int FROM iterations i WHERE i.run_id = r.id AND i.step_count > 0) AS rollout_iterations
         FROM unnest($1::uuid[]) AS r(id)`,
        [ids, TRAINING_SUCCESS, EVALUATION_SUCCESS],
      );
      const byId = new Map(res.rows.map((r) => [r.run_id, r]));
      return ids.map((id) => ({
        training: byId.get(id)?.training ?? null,
        evaluation: byId.get(id)?.evaluation ?? null,
        rolloutIterations: byId.get(id)?.rollout_iterations ?? 0,
      }));
    }),

    iterations: new DataLoader<string, Iteration[]>(async (runIds) => {
      const res = await pool.query<{
        run_id: string;
        iteration: number;
        group_count: number;
        trajectory_count: number;
        step_count: number;
        metrics: Record<string, number>;
        evaluation_success_rate: number | null;
      }>(
        `SELECT run_id, iteration, group_count, trajectory_count, step_count, metrics, evaluation_success_rate
         FROM iterations WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, iteration`,
        [runIds],
      );
      const byRun = new Map<string, Iteration[]>(runIds.map((r) => [r, []]));
      for (const r of res.rows) {
        byRun.get(r.run_id)?.push({
          index: r.iteration,
          groupCount: r.group_count,
          trajectoryCount: r.trajectory_count,
          stepCount: r.step_count,
          metrics: r.metrics,
          evaluationSuccessRate: r.evaluation_success_rate,
        });
      }
      return runIds.map((r) => byRun.get(r) ?? []);
    }),

    events: new DataLoader<EventPageKey, RunEvent[], string>(
      async (keys) => {
        const res = await pool.query<{
          n: string;
          seq: string;
          id: string;
          type: string;
          iteration: number | null;
          data: unknown;
          step_count: number;
          recorded_at: Date;
        }>(
          `SELECT k.n, e.seq, e.id, e.type, e.iteration, e.data, e.step_count, e.recorded_at
           FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::int[]) WITH ORDINALITY AS k(run_id, after_seq, types, lim, n)
           CROSS JOIN LATERAL (
             SELECT * FROM events e
             WHERE e.run_id = k.run_id AND e.seq > k.after_seq
               AND (k.types IS NULL OR e.type = ANY(string_to_array(k.types, ',')))
             ORDER BY e.seq LIMIT k.lim) e
           ORDER BY k.n, e.seq`,
          [
            keys.map((k) => k.runId),
            keys.map((k) => k.afterSeq),
            keys.map((k) => k.types?.join(',') ?? null),
            keys.map((k) => k.limit),
          ],
        );
        const out = keys.map(() => [] as RunEvent[]);
        for (const r of res.rows) {
          out[Number(r.n) - 1]?.push({
            seq: Number(r.seq),
            id: r.id,
            type: r.type as EventType,
            iteration: r.iteration,
            data: r.data,
            stepCount: r.step_count,
            recordedAt: r.recorded_at,
          });
        }
        return out;
      },
      { cacheKeyFn: (k) => JSON.stringify(k) },
    ),
  };
}

export type RunLoaders = ReturnType<typeof createRunLoaders>;
