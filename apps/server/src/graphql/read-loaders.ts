import DataLoader from 'dataloader';
import type { Database } from '../database/database';
import { unpackFloat32 } from '../ingest/copy-text';
import type { Iteration, RolloutGroup, RunEvent, Step, Trajectory } from './models';

export interface GroupPageKey {
  runId: string;
  iteration: number;
  afterPosition: number;
  limit: number;
}

export interface EventPageKey {
  runId: string;
  afterSeq: number;
  types: string[] | null;
  limit: number;
}

/**
 * Per-request batch loaders: whatever the page sizes, a nested query costs one
 * statement per level (groups, trajectories, steps with their texts), because
 * every parent's request at a level is answered by a single SQL statement.
 */
export function createReadLoaders(db: Database) {
  const pool = db.pool;
  return {
    groups: new DataLoader<GroupPageKey, RolloutGroup[], string>(
      async (keys) => {
        const res = await pool.query<{
          n: string;
          id: string;
          key: string;
          iteration: number;
          ord: number;
        }>(
          `SELECT k.n, g.id, g.key, g.iteration, g.ord
           FROM unnest($1::uuid[], $2::int[], $3::int[], $4::int[]) WITH ORDINALITY AS k(run_id, iteration, after_ord, lim, n)
           CROSS JOIN LATERAL (
             SELECT id, key, iteration, ord FROM rollout_groups g
             WHERE g.run_id = k.run_id AND g.iteration = k.iteration AND g.ord > k.after_ord
             ORDER BY g.ord LIMIT k.lim) g
           ORDER BY k.n, g.ord`,
          [
            keys.map((k) => k.runId),
            keys.map((k) => k.iteration),
            keys.map((k) => k.afterPosition),
            keys.map((k) => k.limit),
          ],
        );
        const out = keys.map(() => [] as RolloutGroup[]);
        for (const r of res.rows) {
          out[Number(r.n) - 1]?.push({
            internalId: r.id,
            id: r.key,
            iteration: r.iteration,
            position: r.ord,
          });
        }
        return out;
      },
      { cacheKeyFn: (k) => JSON.stringify(k) },
    ),

    trajectories: new DataLoader<string, Trajectory[]>(async (groupIds) => {
      // Offsets (where each trajectory starts in canonical order) need every trajectory of the iteration.
      const res = await pool.query<{
        id: string;
        group_id: string;
        run_id: string;
        iteration: number;
        key: string;
        outcome: string | null;
        return: number;
        step_count: number;
        offset: string;
      }>(
        `WITH its AS (SELECT DISTINCT run_id, iteration FROM rollout_groups WHERE id = ANY($1::bigint[])),
              ordered AS (
                SELECT t.id, t.group_id, t.run_id, t.iteration, t.key, t.outcome, t.return, t.step_count, g.ord AS g_ord, t.ord,
                       sum(t.step_count) OVER (PARTITION BY t.run_id, t.iteration ORDER BY g.ord, t.ord) - t.step_count AS offset
                FROM trajectories t JOIN rollout_groups g ON g.id = t.group_id
                JOIN its ON its.run_id = t.run_id AND its.iteration = t.iteration)
         SELECT * FROM ordered WHERE group_id = ANY($1::bigint[]) ORDER BY group_id, ord`,
        [groupIds],
      );
      const byGroup = new Map<string, Trajectory[]>(groupIds.map((g) => [g, []]));
      for (const r of res.rows) {
        byGroup.get(r.group_id)?.push({
          internalId: r.id,
          runId: r.run_id,
          iteration: r.iteration,
          offset: Number(r.offset),
          id: r.key,
          outcome: r.outcome ?? (r.return > 0 ? 'success' : 'failure'),
          outcomeGiven: r.outcome !== null,
          return: r.return,
          length: r.step_count,
        });
      }
      return groupIds.map((g) => byGroup.get(g) ?? []);
    }),

    steps: new DataLoader<string, Omit<Step, 'runId' | 'iteration' | 'position'>[]>(
      async (trajectoryIds) => {
        const res = await pool.query<StepRow>(
          `SELECT s.trajectory_id, s.idx, s.seq, st.text AS state, ac.text AS action, s.reward, s.nll,
                s.token_logprobs, s.embedding, s.value, ns.text AS next_state, s.next_value, s.extra
         FROM steps s
         JOIN texts st ON st.id = s.state_id
         JOIN texts ac ON ac.id = s.action_id
         LEFT JOIN texts ns ON ns.id = s.next_state_id
         WHERE s.trajectory_id = ANY($1::bigint[]) ORDER BY s.trajectory_id, s.idx`,
          [trajectoryIds],
        );
        const byTrajectory = new Map<string, Omit<Step, 'runId' | 'iteration' | 'position'>[]>(
          trajectoryIds.map((t) => [t, []]),
        );
        for (const r of res.rows) byTrajectory.get(r.trajectory_id)?.push(toStep(r));
        return trajectoryIds.map((t) => byTrajectory.get(t) ?? []);
      },
    ),

    iterations: new DataLoader<string, Iteration[]>(async (runIds) => {
      const [counts, logged] = await Promise.all([
        pool.query<{
          run_id: string;
          iteration: number;
          groups: number;
          trajectories: number;
          steps: string;
        }>(
          `SELECT run_id, iteration, count(DISTINCT group_id)::int AS groups, count(*)::int AS trajectories,
                  sum(step_count) AS steps
           FROM trajectories WHERE run_id = ANY($1::uuid[]) GROUP BY run_id, iteration`,
          [runIds],
        ),
        pool.query<{
          run_id: string;
          iteration: number;
          type: string;
          data: Record<string, unknown>;
        }>(
          `SELECT run_id, iteration, type, data FROM events
           WHERE run_id = ANY($1::uuid[]) AND type IN ('metrics.logged', 'evaluation.logged') ORDER BY run_id, seq`,
          [runIds],
        ),
      ]);
      const byRun = new Map<string, Map<number, Iteration>>(runIds.map((r) => [r, new Map()]));
      const at = (runId: string, index: number): Iteration => {
        const its = byRun.get(runId) as Map<number, Iteration>;
        let it = its.get(index);
        if (!it) {
          it = {
            index,
            groupCount: 0,
            trajectoryCount: 0,
            stepCount: 0,
            metrics: {},
            evaluationSuccessRate: null,
          };
          its.set(index, it);
        }
        return it;
      };
      for (const r of counts.rows) {
        Object.assign(at(r.run_id, r.iteration), {
          groupCount: r.groups,
          trajectoryCount: r.trajectories,
          stepCount: Number(r.steps),
        });
      }
      for (const r of logged.rows) {
        const it = at(r.run_id, r.iteration);
        if (r.type === 'metrics.logged')
          Object.assign(it.metrics, r.data.metrics as Record<string, number>);
        else it.evaluationSuccessRate = r.data.successRate as number;
      }
      return runIds.map((r) =>
        [...(byRun.get(r) as Map<number, Iteration>).values()].sort((a, b) => a.index - b.index),
      );
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
            type: r.type,
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

export type ReadLoaders = ReturnType<typeof createReadLoaders>;

interface StepRow {
  trajectory_id: string;
  idx: number;
  seq: string;
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  token_logprobs: Buffer | null;
  embedding: Buffer | null;
  value: number | null;
  next_state: string | null;
  next_value: number | null;
  extra: unknown;
}

function toStep(r: StepRow): Omit<Step, 'runId' | 'iteration' | 'position'> {
  return {
    index: r.idx,
    seq: Number(r.seq),
    state: r.state,
    action: r.action,
    reward: r.reward,
    nll: r.nll,
    tokenLogprobs: r.token_logprobs ? unpackFloat32(r.token_logprobs) : null,
    embedding: r.embedding ? unpackFloat32(r.embedding) : null,
    value: r.value,
    nextState: r.next_state,
    nextValue: r.next_value,
    extra: r.extra,
  };
}
