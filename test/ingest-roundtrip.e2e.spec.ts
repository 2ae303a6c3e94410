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

/** Each fixture sent with its steps as columns (the clients' default) and as objects. */
const IN_BOTH_FORMS = fixtureBatches().flatMap(([name, batch]) =>
  [true, false].map((columnar) => [name, columnar ? 'columns' : 'objects', batch] as const),
);

test.each(IN_BOTH_FORMS)(
  '%s: rollouts.appended in chunks, steps as %s, round-trips exactly',
  async (name, form, batch) => {
    const { id } = await client.createRun({ name, env: 'fixtures', method: 'gigpo' });
    // Small events (≤ 10 steps) so trajectories continue across events and requests.
    const events = rolloutEvents(3, batch, 10, { columnar: form === 'columns' });
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

/**
 * Steps `from`..`to` of a trajectory of group `g`, as steps.appended events of 1,000 steps each; a
 * step's reward is 1 every tenth step, so that a trajectory's return tells its length.
 */
function stepsAppended(iteration: number, trajectoryId: string, from: number, to: number) {
  return Array.from({ length: Math.ceil((to - from) / 1000) }, (_, c): ClientEvent => {
    const first = from + 1000 * c;
    return {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration,
        groupId: 'g',
        trajectoryId,
        firstStepIndex: first,
        steps: Array.from({ length: Math.min(to, first + 1000) - first }, (_, j) => {
          const k = first + j;
          return { state: `s${k % 7}`, action: `a${k % 3}`, reward: k % 10 === 0 ? 1 : 0 };
        }),
      },
    };
  });
}

test('a trajectory continued across write chunks and requests keeps its length, return and outcome', async () => {
  // 17,000 steps in one request cross the server's 16,000-step write chunk. The next request
  // continues the trajectory across a chunk too, and adds new trajectories to the same stored group
  // in both of its chunks: each gets the next place in the group, though the first one's row is
  // not written yet when the second is placed (the request's rows of trajectories are written at
  // its end).
  const big = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 100_000 });
  const { id } = await big.createRun({ name: 'long', env: 'fixtures', method: 'grpo' });
  const append = (trajectoryId: string, from: number, to: number) =>
    stepsAppended(0, trajectoryId, from, to);
  expect((await big.appendEvents(id, append('long', 0, 17_000))).requests).toBe(1);
  const second = await big.appendEvents(id, [
    ...append('short', 0, 5),
    ...append('long', 17_000, 34_000),
    ...append('late', 0, 3),
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'g', trajectoryId: 'long', outcome: 'truncated' },
    },
  ]);
  expect(second.requests).toBe(1);
  const [group] = await readIteration(server, id, 0);
  const [long, short, late] = group!.trajectories;
  expect(long).toMatchObject({
    id: 'long',
    length: 34_000,
    outcome: 'truncated',
    outcomeGiven: true,
  });
  expect(long!.return).toBe(3400);
  expect(long!.steps.map((x) => x.index)).toEqual([...Array(34_000).keys()]);
  expect(short).toMatchObject({ id: 'short', length: 5, outcome: 'success', outcomeGiven: false });
  expect(late).toMatchObject({ id: 'late', length: 3, outcome: 'success', outcomeGiven: false });
});

test('an iteration that goes on after the next one began, in one request across write chunks, is stored whole', async () => {
  // Trainers send an iteration before the next, but need not: iteration 0 goes on (more steps and
  // an outcome for its trajectory, a new trajectory in its group) after 17,000 steps of iteration 1,
  // in a later write chunk than its first steps.
  const big = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 100_000 });
  const { id } = await big.createRun({ name: 'moved past', env: 'fixtures', method: 'grpo' });
  const sent = await big.appendEvents(id, [
    ...stepsAppended(0, 'early', 0, 8_000),
    ...stepsAppended(1, 'next', 0, 17_000),
    ...stepsAppended(0, 'early', 8_000, 20_000),
    ...stepsAppended(0, 'after', 0, 3),
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'g', trajectoryId: 'early', outcome: 'truncated' },
    },
  ]);
  expect(sent.requests).toBe(1);
  const [group] = await readIteration(server, id, 0);
  expect(
    group!.trajectories.map((t) => [t.id, t.length, t.return, t.outcome, t.outcomeGiven]),
  ).toEqual([
    ['early', 20_000, 2000, 'truncated', true],
    ['after', 3, 1, 'success', false],
  ]);
  const [next] = await readIteration(server, id, 1);
  expect(next!.trajectories.map((t) => [t.id, t.length])).toEqual([['next', 17_000]]);
});

test('fields beyond rollout-batch/v1 are kept as sent, as objects or in the extra column', async () => {
  const step = { state: 's', action: 'a', reward: 1, trueAdvantage: 0.25, info: { room: 3 } };
  const plain = { state: 's', action: 'b', reward: 0 };
  const batch = {
    format: 'rollout-batch/v1' as const,
    groups: [{ id: 'g', trajectories: [{ id: 't', steps: [step, plain] }] }],
  };
  for (const columnar of [false, true]) {
    const { id } = await client.createRun({ name: `extra ${columnar}`, env: 'e', method: 'grpo' });
    const events = rolloutEvents(0, batch, 2000, { columnar });
    expect('columns' in events[0]!.data).toBe(columnar);
    await client.appendEvents(id, events);
    const [group] = await readIteration(server, id, 0);
    const [first, second] = group!.trajectories[0]!.steps;
    expect(first!.extra).toEqual({ trueAdvantage: 0.25, info: { room: 3 } });
    expect(second!.extra).toBeNull();
  }
});
