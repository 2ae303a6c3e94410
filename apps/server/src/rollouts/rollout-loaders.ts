import DataLoader from 'dataloader';
import type { Reader } from '../database/database';
import { unpackFloat32Array } from '../advantages/advantage-codec';
import type { TrajectoryOutcome } from '../graphql/enums';
import type { RolloutGroup, Step, Trajectory } from './rollout.models';
import { stepText } from './step-text-sql';

export interface GroupPageKey {
  runId: string;
  iteration: number;
  afterPosition: number;
  limit: number;
}

/**
 * Per-request batch loaders of the rollouts: whatever the page sizes, a nested query costs one
 * statement per level (groups, trajectories, steps with their texts), because every parent's
 * request at a level is answered by a single SQL statement.
 */
export function createRolloutLoaders(reader: Reader) {
  const pool = reader.pool;
  return {
    /** A task group by its id (as sent) in an iteration. */
    groupByKey: new DataLoader<
      { runId: string; iteration: number; key: string },
      RolloutGroup | undefined,
      string
    >(
      async (keys) => {
        const res = await pool.query<{
          n: string;
          run_id: string;
          iteration: number;
          ord: number;
          key: string;
        }>(
          `SELECT k.n, g.run_id, g.iteration, g.ord, g.key
           FROM unnest($1::uuid[], $2::int[], $3::text[]) WITH ORDINALITY AS k(run_id, iteration, key, n)
           JOIN rollout_groups g USING (run_id, iteration, key)`,
          [keys.map((k) => k.runId), keys.map((k) => k.iteration), keys.map((k) => k.key)],
        );
        const out = keys.map((): RolloutGroup | undefined => undefined);
        for (const r of res.rows) out[Number(r.n) - 1] = toGroup(r);
        return out;
      },
      { cacheKeyFn: (k) => JSON.stringify(k) },
    ),

    groups: new DataLoader<GroupPageKey, RolloutGroup[], string>(
      async (keys) => {
        const res = await pool.query<{
          n: string;
          key: string;
          iteration: number;
          ord: number;
          run_id: string;
        }>(
          `SELECT k.n, g.key, g.iteration, g.ord, g.run_id
           FROM unnest($1::uuid[], $2::int[], $3::int[], $4::int[]) WITH ORDINALITY AS k(run_id, iteration, after_ord, lim, n)
           CROSS JOIN LATERAL (
             SELECT run_id, key, iteration, ord FROM rollout_groups g
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
          out[Number(r.n) - 1]?.push(toGroup(r));
        }
        return out;
      },
      { cacheKeyFn: (k) => JSON.stringify(k) },
    ),

    trajectories: new DataLoader<GroupKey, Trajectory[], string>(
      async (groups) => {
        const res = await pool.query<TrajectoryRow>(
          `SELECT t.* FROM unnest($1::uuid[], $2::int[], $3::int[]) AS g(run_id, iteration, group_ord)
           JOIN trajectories t USING (run_id, iteration, group_ord)
           ORDER BY t.run_id, t.iteration, t.group_ord, t.ord`,
          [
            groups.map((g) => g.runId),
            groups.map((g) => g.iteration),
            groups.map((g) => g.position),
          ],
        );
        const byGroup = new Map<string, Trajectory[]>(groups.map((g) => [groupKey(g), []]));
        for (const r of res.rows) {
          byGroup
            .get(groupKey({ runId: r.run_id, iteration: r.iteration, position: r.group_ord }))
            ?.push(toTrajectory(r));
        }
        return groups.map((g) => byGroup.get(groupKey(g)) ?? []);
      },
      { cacheKeyFn: groupKey },
    ),

    /** A trajectory by its id (as sent) in an iteration. */
    trajectoryByKey: new DataLoader<
      { runId: string; iteration: number; key: string },
      Trajectory | undefined,
      string
    >(
      async (keys) => {
        const res = await pool.query<TrajectoryRow & { n: string }>(
          `SELECT k.n, t.* FROM unnest($1::uuid[], $2::int[], $3::text[]) WITH ORDINALITY AS k(run_id, iteration, key, n)
           JOIN trajectories t USING (run_id, iteration, key)`,
          [keys.map((k) => k.runId), keys.map((k) => k.iteration), keys.map((k) => k.key)],
        );
        const out = keys.map((): Trajectory | undefined => undefined);
        for (const r of res.rows) out[Number(r.n) - 1] = toTrajectory(r);
        return out;
      },
      { cacheKeyFn: (k) => JSON.stringify(k) },
    ),

    /** A trajectory's steps by index, without their embeddings (most reads: a trajectory's rewards). */
    steps: stepsLoader(reader, { embeddings: false }),
    /** The same with embeddings, which may be read from the event log's bodies: only when asked for. */
    stepsWithEmbeddings: stepsLoader(reader, { embeddings: true }),
  };
}

export type RolloutLoaders = ReturnType<typeof createRolloutLoaders>;

/**
 * Steps of many trajectories in one statement, with their texts, as the API's steps: each made
 * once, whole (an iteration's read makes thousands, so neither copied again nor keyed per row).
 */
function stepsLoader(reader: Reader, { embeddings }: { embeddings: boolean }) {
  return new DataLoader<StepsKey, Step[], string>(
    async (trajectories) => {
      const res = await reader.pool.query<StepRow>(
        `SELECT s.run_id, s.iteration, s.group_ord, s.traj_ord, s.idx, s.seq,
                ${stepText('state_id')} AS state, ${stepText('action_id')} AS action,
                s.reward, s.nll, s.token_logprobs,
                ${embeddings ? 's.embedding' : 'NULL::bytea AS embedding'}, s.value,
                ${stepText('next_state_id')} AS next_state, s.next_value, s.extra
         FROM unnest($1::uuid[], $2::int[], $3::int[], $4::int[]) AS k(run_id, iteration, group_ord, traj_ord)
         JOIN steps s USING (run_id, iteration, group_ord, traj_ord)
         ORDER BY s.run_id, s.iteration, s.group_ord, s.traj_ord, s.idx`,
        [
          trajectories.map((t) => t.runId),
          trajectories.map((t) => t.iteration),
          trajectories.map((t) => t.groupPosition),
          trajectories.map((t) => t.position),
        ],
      );
      const byTrajectory = new Map<string, { trajectory: StepsKey; steps: Step[] }>(
        trajectories.map((t) => [trajectoryKey(t), { trajectory: t, steps: [] }]),
      );
      // The rows come a trajectory at a time (the ORDER BY): its entry is looked up once per trajectory.
      let at: { trajectory: StepsKey; steps: Step[] } | undefined;
      let last: StepRow | undefined;
      for (const r of res.rows) {
        if (
          !last ||
          r.traj_ord !== last.traj_ord ||
          r.group_ord !== last.group_ord ||
          r.iteration !== last.iteration ||
          r.run_id !== last.run_id
        )
          at = byTrajectory.get(
            trajectoryKey({
              runId: r.run_id,
              iteration: r.iteration,
              groupPosition: r.group_ord,
              position: r.traj_ord,
            }),
          );
        last = r;
        at?.steps.push(toStep(r, at.trajectory));
      }
      return trajectories.map((t) => byTrajectory.get(trajectoryKey(t))?.steps ?? []);
    },
    { cacheKeyFn: trajectoryKey },
  );
}

/** A task group's place: (run, iteration, position in the iteration). */
type GroupKey = Pick<RolloutGroup, 'runId' | 'iteration' | 'position'>;
const groupKey = (g: GroupKey) => `${g.runId}/${g.iteration}/${g.position}`;
/** A trajectory's place: its group's, and its position in the group. */
type TrajectoryKey = Pick<Trajectory, 'runId' | 'iteration' | 'groupPosition' | 'position'>;
const trajectoryKey = (t: TrajectoryKey) =>
  `${t.runId}/${t.iteration}/${t.groupPosition}/${t.position}`;

/** What the steps of a trajectory are asked by: its place, and its id, which each step carries. */
type StepsKey = TrajectoryKey & Pick<Trajectory, 'id'>;

interface TrajectoryRow {
  run_id: string;
  iteration: number;
  group_ord: number;
  ord: number;
  key: string;
  outcome: string;
  outcome_given: boolean;
  return: number;
  step_count: number;
}

function toTrajectory(r: TrajectoryRow): Trajectory {
  return {
    runId: r.run_id,
    iteration: r.iteration,
    groupPosition: r.group_ord,
    position: r.ord,
    id: r.key,
    outcome: r.outcome as TrajectoryOutcome,
    outcomeGiven: r.outcome_given,
    return: r.return,
    length: r.step_count,
  };
}

interface StepRow {
  run_id: string;
  iteration: number;
  group_ord: number;
  traj_ord: number;
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

function toStep(r: StepRow, trajectory: StepsKey): Step {
  return {
    runId: trajectory.runId,
    iteration: trajectory.iteration,
    trajectoryId: trajectory.id,
    index: r.idx,
    seq: Number(r.seq),
    state: r.state,
    action: r.action,
    reward: r.reward,
    nll: r.nll,
    tokenLogprobs: r.token_logprobs ? Array.from(unpackFloat32Array(r.token_logprobs)) : null,
    embedding: r.embedding ? Array.from(unpackFloat32Array(r.embedding)) : null,
    value: r.value,
    nextState: r.next_state,
    nextValue: r.next_value,
    extra: r.extra,
  };
}

/** A rollout_groups row as the GraphQL type. */
function toGroup(r: { run_id: string; key: string; iteration: number; ord: number }): RolloutGroup {
  return { runId: r.run_id, id: r.key, iteration: r.iteration, position: r.ord };
}
