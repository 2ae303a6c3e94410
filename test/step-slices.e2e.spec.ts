import { newEventId, rolloutEvents } from '@creditlab/client';
import { serverForFile } from './support/file-server';
import { sqlQuery } from './support/sql-query';

/**
 * Steps are stored a slice per row (migrations/20261206000000_step_slices): the steps one event
 * gives one trajectory, at most MAX_ROW_STEPS (1,024) per row, read back one per step through the
 * `steps` view. A long trajectory becomes several rows, an empty one none, and a trajectory
 * continued by later events gets a row per event.
 */
const ctx = serverForFile();

const query = (sql: string, params: unknown[]) => sqlQuery(ctx.server.databaseUrl, sql, params);

const slicesOf = (runId: string) =>
  query(
    `SELECT traj_ord, first_idx, step_count, seq::int FROM step_slices WHERE run_id = $1
     ORDER BY iteration, group_ord, traj_ord, first_idx`,
    [runId],
  );

const step = (i: number) => ({
  state: `s${i % 7}`,
  action: `a${i % 3}`,
  reward: i / 100,
  ...(i % 5 === 0 ? {} : { nll: i / 1000 }),
});

test('a 2,500-step trajectory is stored as rows of 1,024, 1,024 and 452 steps, alike from objects and columns', async () => {
  const batch = {
    groups: [
      {
        id: 'g',
        trajectories: [{ id: 'long', steps: Array.from({ length: 2500 }, (_, i) => step(i)) }],
      },
    ],
  };
  const stored: Record<string, unknown>[][] = [];
  for (const columnar of [false, true]) {
    const run = await ctx.client.createRun({ name: `long ${columnar}`, env: 'e', method: 'grpo' });
    const events = rolloutEvents(0, batch, 3000, { columnar });
    expect(events).toHaveLength(1);
    expect('columns' in events[0]!.data).toBe(columnar);
    await ctx.client.appendEvents(run.id, events);
    expect((await slicesOf(run.id)).map((s) => [s.first_idx, s.step_count])).toEqual([
      [0, 1024],
      [1024, 1024],
      [2048, 452],
    ]);
    const steps = await query(`SELECT idx, reward, nll FROM steps WHERE run_id = $1 ORDER BY idx`, [
      run.id,
    ]);
    expect(steps).toEqual(
      batch.groups[0]!.trajectories[0]!.steps.map((s, i) => ({
        idx: i,
        reward: s.reward,
        nll: s.nll ?? null,
      })),
    );
    stored.push(
      await query(
        `SELECT state_id, action_id, reward, nll, value, embedding FROM step_slices
         WHERE run_id = $1 ORDER BY first_idx`,
        [run.id],
      ),
    );
  }
  expect(stored[1]).toEqual(stored[0]);
});

test('an empty trajectory has no row; the events that continue it each add one, at the index they continue from', async () => {
  const run = await ctx.client.createRun({ name: 'continued', env: 'e', method: 'grpo' });
  const appendSteps = (firstStepIndex: number, from: number, count: number) => ({
    id: newEventId(),
    type: 'steps.appended' as const,
    data: {
      iteration: 0,
      groupId: 'g',
      trajectoryId: 't',
      firstStepIndex,
      steps: Array.from({ length: count }, (_, i) => step(from + i)),
    },
  });
  await ctx.client.appendEvents(run.id, [
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: { iteration: 0, groups: [{ id: 'g', trajectories: [{ id: 't', steps: [] }] }] },
    },
  ]);
  expect(await slicesOf(run.id)).toEqual([]);
  await ctx.client.appendEvents(run.id, [appendSteps(0, 0, 2)]);
  await ctx.client.appendEvents(run.id, [appendSteps(2, 2, 3)]);
  const slices = await slicesOf(run.id);
  expect(slices.map((s) => [s.first_idx, s.step_count])).toEqual([
    [0, 2],
    [2, 3],
  ]);
  expect(slices[1]!.seq).toBeGreaterThan(slices[0]!.seq as number);
  const steps = await query(
    `SELECT idx, seq::int, reward FROM steps WHERE run_id = $1 ORDER BY idx`,
    [run.id],
  );
  expect(steps.map((s) => [s.idx, s.seq, s.reward])).toEqual(
    [0, 1, 2, 3, 4].map((i) => [i, slices[i < 2 ? 0 : 1]!.seq, step(i).reward]),
  );
});
