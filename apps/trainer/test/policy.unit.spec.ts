import * as tf from '@tensorflow/tfjs';
import {
  admissibleActions,
  seededRandom,
  householdTask,
  initialState,
  observe,
  shortestSolution,
  step,
} from '@creditlab/envs';
import { selectBackend } from '../src/policy/backend';
import { ppoUpdate, type PpoSample } from '../src/policy/ppo';
import { TextPolicy, type Decision } from '../src/policy/text-policy';

/** Decisions along a tiny task's solution: observations and admissible actions as the trainer sees them. */
function decisionsOf(seed: number): (Decision & { solutionIndex: number })[] {
  const task = householdTask(seed, 'tiny');
  let s = initialState(task);
  return shortestSolution(task)!.map((a) => {
    const d = { observation: observe(task, s), actions: admissibleActions(task, s) };
    s = step(task, s, a).state;
    return { ...d, solutionIndex: d.actions.indexOf(a) };
  });
}

beforeAll(async () => {
  await tf.setBackend('cpu'); // deterministic and quick for unit tests; the trainer picks the fastest one
});

test('the backend chooser ends on a working backend', async () => {
  const name = await selectBackend();
  expect(['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']).toContain(name);
  expect(tf.tidy(() => tf.add(tf.scalar(1), tf.scalar(2)).dataSync()[0])).toBe(3);
  await tf.setBackend('cpu');
});

test('the policy gives a distribution over each decision’s own actions, a hidden vector and a value', () => {
  const policy = new TextPolicy({ vocab: 512, hidden: 16, seed: 1 });
  const decisions = [...decisionsOf(3), ...decisionsOf(4)];
  const scored = policy.score(decisions);
  scored.forEach((s, i) => {
    expect(s.logProbs).toHaveLength(decisions[i]!.actions.length);
    expect(s.logProbs.reduce((acc, lp) => acc + Math.exp(lp), 0)).toBeCloseTo(1, 5);
    expect(s.hidden).toHaveLength(16);
    expect(Number.isFinite(s.value)).toBe(true);
  });
  policy.dispose();
});

test('one PPO update raises the log-probability of positive-advantage actions and lowers negative ones', () => {
  const policy = new TextPolicy({ vocab: 512, hidden: 16, seed: 2 });
  const decisions = [...decisionsOf(1), ...decisionsOf(2), ...decisionsOf(3)];
  const before = policy.score(decisions);
  // The solution's action is good; the last admissible action ("inventory") is bad.
  const batch: PpoSample[] = decisions.flatMap((d, i) => [
    {
      ...d,
      chosen: d.solutionIndex,
      oldLogProb: before[i]!.logProbs[d.solutionIndex]!,
      advantage: 1,
    },
    {
      ...d,
      chosen: d.actions.length - 1,
      oldLogProb: before[i]!.logProbs[d.actions.length - 1]!,
      advantage: -1,
    },
  ]);
  const metrics = ppoUpdate(policy, batch, {
    clip: 0.2,
    epochs: 4,
    minibatches: 2,
    learningRate: 0.01,
    entropyCoef: 0,
  });
  const after = policy.score(decisions);
  decisions.forEach((d, i) => {
    expect(after[i]!.logProbs[d.solutionIndex]!).toBeGreaterThan(
      before[i]!.logProbs[d.solutionIndex]!,
    );
    expect(after[i]!.logProbs[d.actions.length - 1]!).toBeLessThan(
      before[i]!.logProbs[d.actions.length - 1]!,
    );
  });
  expect(metrics.entropy).toBeGreaterThan(0);
  expect(Number.isFinite(metrics.approxKl)).toBe(true);
  expect(metrics.clipFraction).toBeGreaterThanOrEqual(0);
  policy.dispose();
});

test('the critic learns its targets without touching the policy: the same updates with and without it leave identical policy weights', () => {
  const decisions = [...decisionsOf(1), ...decisionsOf(2), ...decisionsOf(3)];
  const train = (withCritic: boolean) => {
    const policy = new TextPolicy({ vocab: 512, hidden: 16, seed: 5 });
    const before = policy.score(decisions);
    const batch: PpoSample[] = decisions.map((d, i) => ({
      ...d,
      chosen: d.solutionIndex,
      oldLogProb: before[i]!.logProbs[d.solutionIndex]!,
      advantage: i % 3 === 0 ? -1 : 1,
      valueTarget: 0.9 ** (decisions.length - i),
    }));
    const cfg = { clip: 0.2, epochs: 4, minibatches: 2, learningRate: 0.01, entropyCoef: 0.01 };
    const critic = withCritic ? { optimizer: tf.train.adam(0.05) } : undefined;
    const mse = () => {
      const v = policy.score(decisions).map((s) => s.value);
      return v.reduce((a, x, i) => a + (x - batch[i]!.valueTarget!) ** 2, 0) / v.length;
    };
    const start = mse();
    const metrics = [1, 2, 3].map((k) =>
      ppoUpdate(policy, batch, cfg, undefined, seededRandom(k), critic),
    );
    const weights = [policy.E, policy.W, policy.b, policy.U].map((v) => Array.from(v.dataSync()));
    const out = { weights, start, end: mse(), metrics };
    policy.dispose();
    return out;
  };
  const plain = train(false);
  const critic = train(true);
  expect(critic.weights).toEqual(plain.weights); // bit for bit
  expect(plain.metrics.every((m) => m.valueLoss === undefined)).toBe(true);
  expect(plain.end).toBe(plain.start); // the value head never moves without the critic
  expect(critic.end).toBeLessThan(critic.start / 2);
  expect(critic.metrics[2]!.valueLoss).toBeCloseTo(critic.end, 5);
});
