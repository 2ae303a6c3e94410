import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import type { RolloutBatch } from '@creditlab/estimators';
import { startTestServer, type ServerProcess, ADMIN_KEY } from './support/test-server';
import { fixtureBatches } from './support/fixture-batches';
import { readIteration, type ReadGroup } from './support/read-back';

/**
 * Round trip: every fixture batch goes in as a run (over HTTP, through the
 * client SDK) and comes back through GraphQL identical in every field and in
 * canonical order; embeddings and token log-probs at float32 precision.
 */
let server: ServerProcess;
let client: CreditlabClient;
beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 7 });
});
afterAll(() => server.stop());

const f32 = (xs: number[] | undefined) => (xs === undefined ? null : xs.map(Math.fround));

function expectSameBatch(got: ReadGroup[], want: RolloutBatch): void {
  expect(got.map((g) => g.id)).toEqual(want.groups.map((g) => g.id));
  want.groups.forEach((wg, gi) => {
    const gg = got[gi]!;
    expect(gg.trajectories.map((t) => t.id)).toEqual(wg.trajectories.map((t) => t.id));
    wg.trajectories.forEach((wt, ti) => {
      const gt = gg.trajectories[ti]!;
      const R = wt.steps.reduce((s, x) => s + x.reward, 0);
      expect(gt.outcome).toBe(wt.outcome ?? (R > 0 ? 'success' : 'failure'));
      expect(gt.outcomeGiven).toBe(wt.outcome !== undefined);
      expect(gt.length).toBe(wt.steps.length);
      expect(gt.return).toBeCloseTo(R, 12);
      expect(gt.steps).toEqual(
        wt.steps.map((s, k) => ({
          index: k,
          state: s.state,
          action: s.action,
          reward: s.reward,
          nll: s.nll ?? null,
          tokenLogprobs: f32(s.tokenLogprobs),
          embedding: f32(s.embedding),
          value: s.value ?? null,
          nextState: s.nextState ?? null,
          nextValue: s.nextValue ?? null,
          extra: null,
        })),
      );
    });
  });
}

test.each(fixtureBatches())(
  '%s: rollouts.appended in chunks round-trips exactly',
  async (name, batch) => {
    const { id } = await client.createRun({ name, env: 'fixtures', method: 'gigpo' });
    // Small events (≤ 10 steps) so trajectories continue across events and requests.
    const events = rolloutEvents(3, batch, 10);
    const summary = await client.appendEvents(id, events);
    expect(summary.accepted).toBe(events.length);
    expect(summary.lastSeq).toBe(events.length + 1); // run.created is seq 1
    expectSameBatch(await readIteration(server, id, 3), batch);
  },
);

test('steps.appended one step at a time, then trajectory.finished, round-trips too', async () => {
  const [name, batch] = fixtureBatches()[0]!;
  const { id } = await client.createRun({ name, env: 'fixtures', method: 'grpo' });
  const events: ClientEvent[] = [];
  for (const g of batch.groups) {
    for (const t of g.trajectories) {
      t.steps.forEach((step, k) =>
        events.push({
          id: newEventId(),
          type: 'steps.appended',
          data: {
            iteration: 0,
            groupId: g.id,
            trajectoryId: t.id,
            firstStepIndex: k,
            steps: [{ ...step }],
          },
        }),
      );
      if (t.outcome)
        events.push({
          id: newEventId(),
          type: 'trajectory.finished',
          data: { iteration: 0, groupId: g.id, trajectoryId: t.id, outcome: t.outcome },
        });
    }
  }
  await client.appendEvents(id, events);
  expectSameBatch(await readIteration(server, id, 0), batch);
});

test('a trajectory continued across write chunks and requests keeps its length, return and outcome', async () => {
  // 2,600 steps in one request cross the server's 2,000-step write chunk: the trajectory's row is
  // inserted by the first chunk and updated by the second. The next request continues it, and adds a
  // new trajectory to the same group, so one save both updates a row and inserts one.
  const big = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 1000 });
  const { id } = await big.createRun({ name: 'long', env: 'fixtures', method: 'grpo' });
  const steps = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, j) => {
      const k = from + j;
      return { state: `s${k % 7}`, action: `a${k % 3}`, reward: k % 10 === 0 ? 1 : 0 };
    });
  const append = (trajectoryId: string, from: number, to: number): ClientEvent[] =>
    Array.from({ length: Math.ceil((to - from) / 100) }, (_, c) => ({
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 0,
        groupId: 'g',
        trajectoryId,
        firstStepIndex: from + 100 * c,
        steps: steps(from + 100 * c, Math.min(to, from + 100 * (c + 1))),
      },
    }));
  await big.appendEvents(id, append('long', 0, 2600));
  await big.appendEvents(id, [
    ...append('long', 2600, 2700),
    ...append('short', 0, 5),
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'g', trajectoryId: 'long', outcome: 'truncated' },
    },
  ]);
  const [group] = await readIteration(server, id, 0);
  const [long, short] = group!.trajectories;
  expect(long).toMatchObject({
    id: 'long',
    length: 2700,
    outcome: 'truncated',
    outcomeGiven: true,
  });
  expect(long!.return).toBe(270);
  expect(long!.steps.map((x) => x.index)).toEqual([...Array(2700).keys()]);
  expect(short).toMatchObject({ id: 'short', length: 5, outcome: 'success', outcomeGiven: false });
});

test('fields beyond rollout-batch/v1 are kept as sent', async () => {
  const { id } = await client.createRun({ name: 'extra', env: 'e', method: 'grpo' });
  const step = { state: 's', action: 'a', reward: 1, trueAdvantage: 0.25, info: { room: 3 } };
  await client.appendEvents(id, [
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: { iteration: 0, groups: [{ id: 'g', trajectories: [{ id: 't', steps: [step] }] }] },
    },
  ]);
  const [group] = await readIteration(server, id, 0);
  expect(group!.trajectories[0]!.steps[0]!.extra).toEqual({
    trueAdvantage: 0.25,
    info: { room: 3 },
  });
});
