import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import {
  columnarBatchFromJson,
  listMethods,
  methodInputs,
  withInputs,
  type RolloutBatch,
} from '@creditlab/estimators';
import pg from 'pg';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { readIterations } from '../apps/server/src/advantages/iteration-reader';
import { ADMIN_KEY, startTestServer, type ServerProcess } from './support/test-server';

/**
 * The iteration reader (binary COPY of the columns a method reads, decoded into typed arrays)
 * gives exactly the batch the library builds from the same rollouts: everything when asked for
 * everything, and what `withInputs` keeps when asked for one method's inputs.
 */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let pool: pg.Pool;
beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
});
afterAll(async () => {
  await pool.end();
  await server.stop();
});

/** Stored vectors are float32: round them first so the library sees what the server stores. */
function asStored(batch: RolloutBatch): RolloutBatch {
  for (const g of batch.groups)
    for (const t of g.trajectories)
      for (const s of t.steps) {
        if (s.embedding) s.embedding = s.embedding.map(Math.fround);
        if (s.tokenLogprobs) s.tokenLogprobs = s.tokenLogprobs.map(Math.fround);
      }
  return batch;
}

/** Iteration `i` one step at a time, round-robin over its trajectories (last first): rows land out of canonical order. */
function interleaved(i: number, batch: RolloutBatch): ClientEvent[] {
  const events: ClientEvent[] = [];
  const all = batch.groups.flatMap((g) => g.trajectories.map((t) => ({ g, t })));
  const longest = Math.max(...all.map(({ t }) => t.steps.length));
  for (let k = 0; k < longest; k++) {
    // First steps in order (that order is the canonical one), later ones last trajectory first.
    for (const { g, t } of k === 0 ? all : [...all].reverse()) {
      if (k >= t.steps.length) continue;
      events.push({
        id: newEventId(),
        type: 'steps.appended',
        data: {
          iteration: i,
          groupId: g.id,
          trajectoryId: t.id,
          firstStepIndex: k,
          steps: [{ ...t.steps[k]! }],
        },
      });
    }
  }
  for (const { g, t } of all)
    if (t.outcome)
      events.push({
        id: newEventId(),
        type: 'trajectory.finished',
        data: { iteration: i, groupId: g.id, trajectoryId: t.id, outcome: t.outcome },
      });
  return events;
}

test('three iterations read in one call equal the library batches, whatever the rows order', async () => {
  const shape = { groups: 4, groupSize: 6, maxSteps: 9, statesPerGroup: 5, embeddingDim: 4 };
  const batches = [0, 1, 2].map((i) => asStored(syntheticBatchJson(shape, 50 + i)));
  const { id } = await client.createRun({ name: 'reader', env: 'synthetic', method: 'gigpo' });
  await client.appendEvents(id, [
    ...rolloutEvents(0, batches[0]!, 1),
    ...interleaved(1, batches[1]!),
    ...rolloutEvents(2, batches[2]!, 1),
  ]);
  const read = await readIterations(pool, id, [2, 0, 1]);
  expect([...read.keys()].sort()).toEqual([0, 1, 2]);
  for (const i of [0, 1, 2]) {
    const want = columnarBatchFromJson(batches[i]!);
    expect(read.get(i)!.stepCount).toBe(want.stepCount);
    expect(read.get(i)!.batch).toEqual(want);
  }

  for (const m of listMethods()) {
    const params = m.name === 'gigpo' ? { similarityThreshold: 0.9 } : { bootstrapTruncated: true };
    const own = Object.fromEntries(Object.entries(params).filter(([k]) => k in m.params));
    const inputs = methodInputs(m.name, own);
    const partial = await readIterations(pool, id, [0, 1, 2], { steps: true, inputs });
    for (const i of [0, 1, 2])
      expect(partial.get(i)!.batch).toEqual(withInputs(columnarBatchFromJson(batches[i]!), inputs));
  }
});

test('an iteration with metrics only is left out; shapes without steps read nothing', async () => {
  const { id } = await client.createRun({ name: 'metrics only', env: 'e', method: 'grpo' });
  const batch = asStored(syntheticBatchJson({ groups: 1, groupSize: 2, maxSteps: 3 }, 3));
  await client.appendEvents(id, [
    ...rolloutEvents(0, batch, 1),
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 1, metrics: { loss: 1 } } },
  ]);
  const read = await readIterations(pool, id, [0, 1], { steps: false });
  expect([...read.keys()]).toEqual([0]);
  expect(read.get(0)!.batch).toBeNull();
  expect(read.get(0)!.shape.map((t) => t.trajectoryId)).toEqual(['g0/t0', 'g0/t1']);
});
