import { seededRandom } from '@creditlab/random';
import { pearson } from '@creditlab/stats';
import type { ExperimentPlan } from '../src/experiment-command';
import type { RunRecord } from '../src/experiment-data';
import { valueLossTable } from '../src/experiment-sections';
import { truthRows, truthRowsFromServer, type TruthAnswer } from '../src/experiment-truth';

/** 12 groups of 6 steps: a truth with exact zeros, GRPO-like and noisier series against it. */
function series() {
  const rand = seededRandom(3);
  const groupOf = Array.from({ length: 72 }, (_, k) => Math.floor(k / 6));
  const truth = groupOf.map((_, k) => (k % 4 === 0 ? 0 : rand() - 0.5));
  const close = truth.map((t) => t + 0.2 * (rand() - 0.5));
  const far = truth.map((t, k) => (k % 3 === 0 ? 0 : t + (rand() - 0.5)));
  return { groupOf, truth, close, far };
}

test('truth rows: within-group scores, zeros of each side, and each method against GRPO on the same resamples', () => {
  const { groupOf, truth, close, far } = series();
  const rows = truthRows(
    [
      { method: 'gigpo', advantages: close },
      { method: 'grpo', advantages: far },
      { method: 'grpo-again', advantages: far },
    ],
    truth,
    groupOf,
  );
  expect(rows.map((r) => [r.method, r.steps, r.groups])).toEqual([
    ['gigpo', 72, 12],
    ['grpo', 72, 12],
    ['grpo-again', 72, 12],
  ]);
  const [gigpo, grpo, again] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
  // the mean of the twelve groups' own correlations
  const within = Array.from({ length: 12 }, (_, g) =>
    pearson(close.slice(6 * g, 6 * g + 6), truth.slice(6 * g, 6 * g + 6))!,
  );
  expect(gigpo.groupPearson.estimate).toBeCloseTo(within.reduce((a, b) => a + b) / 12, 12);
  expect(gigpo.pearson.estimate).toBeCloseTo(pearson(close, truth)!, 12);
  expect(gigpo.groupPearson.low!).toBeLessThanOrEqual(gigpo.groupPearson.estimate!);
  expect(gigpo.groupSpearman.high!).toBeGreaterThanOrEqual(gigpo.groupSpearman.estimate!);
  expect(grpo.truthZeroFraction).toBeCloseTo(18 / 72, 12);
  expect(grpo.zeroFraction).toBeCloseTo(24 / 72, 12);
  expect(grpo.bothNonzero).toBe(36);
  expect(gigpo.zeroFraction).toBe(0);
  expect(grpo.groupPearsonMinusGrpo).toBeNull();
  expect(gigpo.groupPearsonMinusGrpo!.estimate).toBeCloseTo(
    gigpo.groupPearson.estimate! - grpo.groupPearson.estimate!,
    12,
  );
  // the close series beats the far one on every resample
  expect(gigpo.groupPearsonMinusGrpo!.low!).toBeGreaterThan(0);
  // the same series as GRPO differs by 0 on every resample
  expect(again.groupPearsonMinusGrpo).toEqual({ estimate: 0, low: 0, high: 0 });
});

test('truth rows from the server: a difference listed as GRPO − method is turned round', () => {
  const iv = (estimate: number, low: number, high: number) => ({ estimate, low, high });
  const scores = {
    pearson: iv(0.3, 0.2, 0.4),
    spearman: iv(0.3, 0.2, 0.4),
    groupPearson: iv(0.3, 0.2, 0.4),
    groupSpearman: iv(0.25, 0.2, 0.3),
    signAgreement: iv(0.7, 0.6, 0.8),
  };
  const answer: TruthAnswer = {
    compare: {
      againstReference: ['grpo', 'gigpo', 'gaca'].map((method) => ({
        method,
        steps: 10,
        bothNonzero: 5,
        zeroFractionA: 0.1,
        zeroFractionB: 0.2,
      })),
      intervals: {
        groups: 4,
        againstReference: ['grpo', 'gigpo', 'gaca'].map((a) => ({ a, ...scores })),
        referenceDifferences: [
          { a: 'grpo', b: 'gigpo', groupPearson: iv(-0.05, -0.08, -0.01) },
          { a: 'grpo', b: 'gaca', groupPearson: iv(0.02, -0.01, 0.04) },
          { a: 'gigpo', b: 'gaca', groupPearson: iv(0.07, 0.01, 0.1) },
        ],
      },
    },
  };
  const rows = truthRowsFromServer(answer);
  expect(rows.map((r) => r.groupPearsonMinusGrpo)).toEqual([
    null,
    iv(0.05, 0.01, 0.08),
    iv(-0.02, -0.04, 0.01),
  ]);
  expect(rows[1]).toMatchObject({
    steps: 10,
    groups: 4,
    bothNonzero: 5,
    zeroFraction: 0.1,
    truthZeroFraction: 0.2,
    groupSpearman: scores.groupSpearman,
  });
});

test('the value loss table: per arm at iteration 1, at its lowest mean and at the last iteration, with the seeds’ range', () => {
  const run = (method: string, whiten: boolean, seed: number, valueLoss: number[]) =>
    ({ method, whiten, seed, valueLoss }) as RunRecord;
  const plan = { methods: ['grpo', 'ppo-gae'], iterations: 3 } as ExperimentPlan;
  const table = valueLossTable(plan, {
    env: 'errand-tiny',
    runs: [
      run('grpo', false, 1, [0.2, 0.1, 0.3]),
      run('grpo', false, 2, [0.4, 0.15, 0.5]),
      run('ppo-gae', false, 1, [0.1, 0.2, 0.05]),
      run('grpo', true, 1, [0.3, NaN, 0.2]),
    ],
  });
  expect(table).toContain(
    '| grpo | 2 | 0.300 (0.200–0.400) | 2: 0.125 (0.100–0.150) | 0.400 (0.300–0.500) |',
  );
  expect(table).toContain(
    '| ppo-gae | 1 | 0.100 (0.100–0.100) | 3: 0.050 (0.050–0.050) | 0.050 (0.050–0.050) |',
  );
  expect(table).toContain('| grpo, whitened | 1 | 0.300 (0.300–0.300) | 3: 0.200 (0.200–0.200) |');
  expect(table).toContain(
    '| arm | seeds | iteration 1 | lowest mean, at iteration | iteration 3 |',
  );
});
