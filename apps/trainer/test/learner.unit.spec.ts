import * as tf from '@tensorflow/tfjs';
import { DEFAULT_CONFIG } from '../src/config';
import { InProcessRuns } from '../src/in-process-runs';
import { Learner } from '../src/learner';
import { ppoBatch } from '../src/ppo-batch';
import type { TaskGroup } from '../src/rollout';
import { sampledRollouts } from '../src/trainer';
import { rolloutEvents } from '@creditlab/client';
import { columnarBatchFromJson, estimate } from '@creditlab/estimators';

const config = { ...DEFAULT_CONFIG, tasksPerIteration: 3, groupSize: 4, trueAdvantages: false };

beforeAll(async () => {
  await tf.setBackend('cpu');
});

async function someGroups(learner: Learner): Promise<TaskGroup[]> {
  return sampledRollouts(config).rollouts(0, learner.policy);
}

const wire = (groups: TaskGroup[]) =>
  groups.map((g) => ({
    id: g.id,
    trajectories: g.trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome,
      steps: t.steps.map((s) => s.record),
    })),
  }));

test('a PPO batch carries the discounted return-to-go as the critic’s target, and whitening standardises the advantages', async () => {
  const learner = new Learner(config);
  const groups = await someGroups(learner);
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  const advantages = Float32Array.from(steps, (_, i) => (i % 4 === 0 ? 0 : i / 10));
  const plain = ppoBatch(groups, advantages, config);
  expect(plain.batch.map((s) => s.advantage)).toEqual(Array.from(advantages));
  const t = groups[0]!.trajectories[0]!;
  const gamma = config.critic.gamma;
  const T = t.steps.length;
  t.steps.forEach((_, j) => {
    let g = 0;
    for (let k = T - 1; k >= j; k--) g = t.steps[k]!.record.reward + gamma * g;
    expect(plain.batch[j]!.valueTarget).toBeCloseTo(g, 12);
  });
  const nonzero = Array.from(advantages).filter((a) => a !== 0);
  expect(plain.advantageRms).toBeCloseTo(
    Math.sqrt(nonzero.reduce((a, x) => a + x * x, 0) / nonzero.length),
    6,
  );
  const white = ppoBatch(groups, advantages, { ...config, whitenAdvantages: true }).batch;
  const a = white.map((s) => s.advantage);
  const mean = a.reduce((x, y) => x + y, 0) / a.length;
  expect(mean).toBeCloseTo(0, 10);
  expect(Math.sqrt(a.reduce((x, y) => x + (y - mean) ** 2, 0) / a.length)).toBeCloseTo(1, 6);
  expect(() => ppoBatch(groups, advantages.subarray(1), config)).toThrow(/advantages for/);
  learner.dispose();
});

test('a checkpoint carries the critic’s optimizer: a learner restored from it updates exactly as the original', async () => {
  const original = new Learner(config);
  const groups = await someGroups(original);
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps)).length;
  const { batch } = ppoBatch(groups, new Float32Array(steps).fill(0.5), config);
  original.update(batch, 0);
  const bytes = await original.checkpoint(1);
  const restored = new Learner(config);
  restored.update(ppoBatch(groups, new Float32Array(steps).fill(-1), config).batch, 5); // elsewhere
  await restored.restore(bytes);
  const a = original.update(batch, 1);
  const b = restored.update(batch, 1);
  expect(b).toEqual(a);
  expect(Array.from(restored.policy.wv.dataSync())).toEqual(
    Array.from(original.policy.wv.dataSync()),
  );
  original.dispose();
  restored.dispose();
});

test('in-process runs answer the library’s advantages on the rollouts as streamed, in float32', async () => {
  const learner = new Learner(config);
  const groups = await someGroups(learner);
  const runs = new InProcessRuns();
  const { id } = await runs.createRun({ name: 'x', env: 'household-tiny', method: 'grpo' });
  // streamed in pieces: a trajectory continues in a later event, as rolloutEvents splits long batches
  await runs.appendEvents(id, rolloutEvents(0, { groups: wire(groups) }, 5));
  // Columns by default (each step's taskSeed in the extra column): kept as the row form keeps them.
  const rows = await runs.createRun({ name: 'rows', env: 'household-tiny', method: 'grpo' });
  await runs.appendEvents(
    rows.id,
    rolloutEvents(0, { groups: wire(groups) }, 5, { columnar: false }),
  );
  const kept = (runId: string) => runs.runs.get(runId)!.iterations.get(0);
  expect(
    kept(id)!
      .flatMap((g) => g.trajectories)
      .some((t) => 'taskSeed' in t.steps[0]!),
  ).toBe(true);
  expect(kept(id)).toEqual(kept(rows.id));
  for (const method of ['grpo', 'gigpo', 'bipace']) {
    const { advantages } = await runs.advantages(id, 0, method);
    const want = estimate(
      columnarBatchFromJson({ format: 'rollout-batch/v1', groups: wire(groups) }),
      method,
    ).advantages;
    expect(Array.from(advantages)).toEqual(Array.from(Float32Array.from(want)));
  }
  await expect(runs.advantages(id, 1, 'grpo')).rejects.toThrow(/no rollouts in iteration 1/);
  learner.dispose();
});
