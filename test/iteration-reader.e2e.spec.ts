import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import {
  columnarBatchFromJson,
  listMethods,
  methodInputs,
  withInputs,
  type RolloutBatch,
} from '@creditlab/estimators';
import pg from 'pg';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { packRun } from '../apps/server/src/advantages/iteration-packing';
import { readIterations } from '../apps/server/src/advantages/iteration-reader';
import { stepByStepEvents } from './support/step-by-step-events';
import { ADMIN_KEY, startTestServer, type ServerProcess } from './support/test-server';

/**
 * The iteration reader (binary COPY of the columns a method reads, decoded into typed arrays)
 * gives exactly the batch the library builds from the same rollouts: everything when asked for
 * everything, and what `withInputs` keeps when asked for one method's inputs; from the steps table
 * and from packed iteration_columns rows alike, and never from a packed row that is stale.
 */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let pool: pg.Pool;
beforeAll(async () => {
  // These tests pack with packRun themselves and check what each pass did: the server's own packing
  // (appends packing what they write whole, a background pass the rest) would pack the same
  // iterations first (seen on a loaded machine), so it packs only on read here, and nothing here
  // reads through the server.
  server = await startTestServer({ CREDITLAB_PACK_ITERATIONS: 'on-read' });
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

test('three iterations read in one call equal the library batches, whatever the rows order', async () => {
  const shape = { groups: 4, groupSize: 6, maxSteps: 9, statesPerGroup: 5, embeddingDim: 4 };
  const batches = [0, 1, 2].map((i) => asStored(syntheticBatchJson(shape, 50 + i)));
  const { id } = await client.createRun({ name: 'reader', env: 'synthetic', method: 'gigpo' });
  await client.appendEvents(id, [
    ...rolloutEvents(0, batches[0]!, 1),
    ...stepByStepEvents(1, batches[1]!),
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

/** Each method's inputs, with the parameters that make it read the most. */
const everyMethodsInputs = () =>
  listMethods().map((m) => {
    const params = m.name === 'gigpo' ? { similarityThreshold: 0.9 } : { bootstrapTruncated: true };
    const own = Object.fromEntries(Object.entries(params).filter(([k]) => k in m.params));
    return methodInputs(m.name, own);
  });

/** A finished run (every iteration complete) of three iterations; one read step by step. */
async function finishedRun(name: string): Promise<{ id: string; batches: RolloutBatch[] }> {
  const shape = { groups: 3, groupSize: 5, maxSteps: 8, statesPerGroup: 4, embeddingDim: 3 };
  const batches = [0, 1, 2].map((i) => asStored(syntheticBatchJson(shape, 70 + i)));
  batches[1]!.groups[0]!.trajectories[0]!.outcome = 'truncated';
  const { id } = await client.createRun({ name, env: 'synthetic', method: 'gigpo' });
  await client.appendEvents(id, [
    ...rolloutEvents(0, batches[0]!, 1),
    ...stepByStepEvents(1, batches[1]!),
    ...rolloutEvents(2, batches[2]!, 1),
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  return { id, batches };
}

const packedRows = async (runId: string) =>
  (
    await pool.query<{ iteration: number; inputs_seq: string }>(
      'SELECT iteration, inputs_seq FROM iteration_columns WHERE run_id = $1 ORDER BY iteration',
      [runId],
    )
  ).rows.map((r) => [r.iteration, Number(r.inputs_seq)]);

test('packed iterations read as the very batches their steps give, for every method', async () => {
  const { id, batches } = await finishedRun('packed');
  await packRun(pool, id);
  const seqs = await readIterations(pool, id, [0, 1, 2], { steps: false, packed: false });
  expect(await packedRows(id)).toEqual([0, 1, 2].map((i) => [i, seqs.get(i)!.inputsSeq]));

  const packed = await readIterations(pool, id, [0, 1, 2]);
  const steps = await readIterations(pool, id, [0, 1, 2], { steps: true, packed: false });
  for (const i of [0, 1, 2]) {
    expect(packed.get(i)!.packed).toBe(true);
    expect(steps.get(i)!.packed).toBe(false);
    expect(packed.get(i)!.shape).toEqual(steps.get(i)!.shape);
    expect(packed.get(i)!.batch).toEqual(columnarBatchFromJson(batches[i]!));
  }
  for (const inputs of everyMethodsInputs()) {
    const read = await readIterations(pool, id, [2, 0, 1], { steps: true, inputs });
    for (const i of [0, 1, 2]) {
      expect(read.get(i)!.packed).toBe(true);
      expect(read.get(i)!.batch).toEqual(withInputs(columnarBatchFromJson(batches[i]!), inputs));
    }
  }
});

test('a packed row is never served once late steps or an outcome change its iteration', async () => {
  const { id, batches } = await finishedRun('stale packed');
  await packRun(pool, id);
  const late = { state: 'late room', action: 'wait', reward: 2, nll: 0.25, value: 0.5 };
  const t = batches[1]!.groups[1]!.trajectories[2]!;
  await client.appendEvents(id, [
    { id: newEventId(), type: 'run.resumed', data: {} },
    {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 1,
        groupId: batches[1]!.groups[1]!.id,
        trajectoryId: t.id,
        firstStepIndex: t.steps.length,
        steps: [{ ...late, embedding: [0.5, 0.25, 1] }],
      },
    },
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 2, groupId: 'g0', trajectoryId: 'g0/t1', outcome: 'truncated' },
    },
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  t.steps.push({ ...late, embedding: [0.5, 0.25, 1] });
  batches[2]!.groups[0]!.trajectories[1]!.outcome = 'truncated';

  const read = await readIterations(pool, id, [0, 1, 2]);
  expect([0, 1, 2].map((i) => read.get(i)!.packed)).toEqual([true, false, false]);
  for (const i of [0, 1, 2]) expect(read.get(i)!.batch).toEqual(columnarBatchFromJson(batches[i]!));

  // Packed again at their new positions, and served again.
  await packRun(pool, id);
  const again = await readIterations(pool, id, [0, 1, 2]);
  expect(await packedRows(id)).toEqual([0, 1, 2].map((i) => [i, again.get(i)!.inputsSeq]));
  for (const i of [0, 1, 2]) {
    expect(again.get(i)!.packed).toBe(true);
    expect(again.get(i)!.batch).toEqual(columnarBatchFromJson(batches[i]!));
  }
});

test('only complete iterations are packed: the one a running run still appends to is not', async () => {
  const batch = asStored(syntheticBatchJson({ groups: 1, groupSize: 2, maxSteps: 3 }, 5));
  const { id } = await client.createRun({ name: 'running', env: 'e', method: 'grpo' });
  await client.appendEvents(id, [...rolloutEvents(0, batch, 1), ...rolloutEvents(1, batch, 1)]);
  await packRun(pool, id);
  expect((await packedRows(id)).map(([i]) => i)).toEqual([0]);
});

test('a pass given where the last one left off packs what completed or changed since, not what it was told is packed', async () => {
  const batch = (seed: number) =>
    asStored(syntheticBatchJson({ groups: 1, groupSize: 2, maxSteps: 3 }, seed));
  const { id } = await client.createRun({ name: 'incremental', env: 'e', method: 'grpo' });
  await client.appendEvents(id, [...rolloutEvents(0, batch(1)), ...rolloutEvents(1, batch(2))]);
  const first = await packRun(pool, id);
  expect(first.packed).toBe(1); // iteration 1 is still open
  expect(first.upTo).toEqual({ seq: 3, lastIteration: 1 });

  // Iteration 2 completes 1; late steps change 0 (packed at an older position now).
  const late = batch(1).groups[0]!.trajectories[0]!;
  await client.appendEvents(id, [
    ...rolloutEvents(2, batch(3)),
    {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 0,
        groupId: batch(1).groups[0]!.id,
        trajectoryId: late.id,
        firstStepIndex: late.steps.length,
        steps: [{ state: 'late', action: 'wait', reward: 1 }],
      },
    },
  ]);
  const second = await packRun(pool, id, undefined, first.upTo);
  expect(second.packed).toBe(2);
  expect((await packedRows(id)).map(([i]) => i)).toEqual([0, 1]);
  expect(second.upTo).toEqual({ seq: 5, lastIteration: 2 });

  // Nothing changed since, so a pass looks at nothing, even though iteration 1's row is gone now (as a
  // rebuild of the run would leave it).
  await pool.query('DELETE FROM iteration_columns WHERE run_id = $1 AND iteration = 1', [id]);
  expect((await packRun(pool, id, undefined, second.upTo)).packed).toBe(0);
  // Looking at everything (what a read that found an unpacked iteration asks for) finds it.
  expect((await packRun(pool, id)).packed).toBe(1);
  expect((await packedRows(id)).map(([i]) => i)).toEqual([0, 1]);
});
