import { newEventId, rolloutEvents } from '@creditlab/client';
import type { RolloutBatch } from '@creditlab/estimators';
import { serverForFile } from './support/file-server';
import { sqlQuery } from './support/sql-query';
import { stepsAppended } from './support/step-by-step-events';

/**
 * A request writes its new task groups and trajectories by statements sent with its others when
 * they are few (a trainer's iteration) and by binary COPY when they are many (rollout-index.ts,
 * ROWS_FOR_COPY): both must give the same rows, and so must the upsert of trajectories stored
 * before that a later request continues or finishes.
 */
const ctx = serverForFile();

const query = (sql: string, params: unknown[]) => sqlQuery(ctx.server.databaseUrl, sql, params);

const GROUPS = 120;
const PER_GROUP = 10; // 120 groups and 1,200 trajectories: more than a thousand rows in one request

const batch: RolloutBatch = {
  format: 'rollout-batch/v1',
  groups: Array.from({ length: GROUPS }, (_, g) => ({
    id: `task-${g}`,
    trajectories: Array.from({ length: PER_GROUP }, (_, t) => ({
      id: `t-${g}-${t}`,
      ...(t % 3 === 0 ? { outcome: 'truncated' as const } : {}),
      steps: [
        { state: `s${g}`, action: `a${t}`, reward: 0 },
        { state: `s${g}'`, action: `b${t}`, reward: (g * PER_GROUP + t) % 2 },
      ],
    })),
  })),
};

/** The batch's groups `from` to `to` (exclusive) as a batch of its own. */
const part = (from: number, to: number): RolloutBatch => ({
  ...batch,
  groups: batch.groups.slice(from, to),
});

/** A later request: one trajectory gets two more steps, another is finished as a success. */
const later = () => [
  stepsAppended(0, 'task-7', 't-7-1', 2, [
    { state: 'x', action: 'y', reward: 0.5 },
    { state: 'x', action: 'z', reward: 0.25 },
  ]),
  {
    id: newEventId(),
    type: 'trajectory.finished' as const,
    data: { iteration: 0, groupId: 'task-9', trajectoryId: 't-9-3', outcome: 'success' as const },
  },
];

async function rowsOf(runId: string) {
  const groups = await query(
    'SELECT iteration, ord, key FROM rollout_groups WHERE run_id = $1 ORDER BY iteration, ord',
    [runId],
  );
  const trajectories = await query(
    `SELECT iteration, group_ord, ord, key, outcome, outcome_given, step_count, return
     FROM trajectories WHERE run_id = $1 ORDER BY iteration, group_ord, ord`,
    [runId],
  );
  const [iteration] = await query(
    'SELECT group_count, trajectory_count, step_count FROM iterations WHERE run_id = $1',
    [runId],
  );
  return { groups, trajectories, iteration };
}

test('groups and trajectories are the same rows from one large request (COPY) as from small ones (statements)', async () => {
  const large = await ctx.client.createRun({ name: 'one request', env: 'e', method: 'grpo' });
  await ctx.client.appendEvents(large.id, rolloutEvents(0, batch, 1_000_000));
  const small = await ctx.client.createRun({ name: 'twelve requests', env: 'e', method: 'grpo' });
  for (let g = 0; g < GROUPS; g += 10)
    await ctx.client.appendEvents(small.id, rolloutEvents(0, part(g, g + 10), 1_000_000));
  for (const run of [large, small]) await ctx.client.appendEvents(run.id, later());

  const a = await rowsOf(large.id);
  const b = await rowsOf(small.id);
  expect(b).toEqual(a);
  expect(a.iteration).toEqual({
    group_count: GROUPS,
    trajectory_count: GROUPS * PER_GROUP,
    step_count: GROUPS * PER_GROUP * 2 + 2,
  });
  expect(a.groups).toEqual(batch.groups.map((g, ord) => ({ iteration: 0, ord, key: g.id })));
  const byKey = new Map(a.trajectories.map((t) => [t.key as string, t]));
  expect(byKey.size).toBe(GROUPS * PER_GROUP);
  // As sent: group and place in it, outcome given or implied by the return.
  expect(byKey.get('t-4-3')).toEqual({
    iteration: 0,
    group_ord: 4,
    ord: 3,
    key: 't-4-3',
    outcome: 'truncated',
    outcome_given: true,
    step_count: 2,
    return: 1,
  });
  expect(byKey.get('t-4-2')).toMatchObject({ outcome: 'failure', outcome_given: false, return: 0 });
  // Changed by the later request: stored rows updated, not added.
  expect(byKey.get('t-7-1')).toMatchObject({ group_ord: 7, ord: 1, step_count: 4, return: 1.75 });
  expect(byKey.get('t-9-3')).toMatchObject({ outcome: 'success', outcome_given: true });
});
