import {
  columnarBatchFromJson,
  estimate,
  resolveParams,
  getMethod,
  sequenceRatio,
  type RolloutBatch,
} from '../src';
import {
  bipaceReference,
  difflibRatio,
  gacaReference,
  gagpoReference,
  gatedBepoReference,
  gigpoReference,
} from './reference/plain-estimators';
import { seededRandom } from '@creditlab/random';
import { syntheticBatchJson, type SyntheticShape } from './support/synthetic-rollouts';
import { expectClose } from './support/tolerance';

/**
 * The optimised columnar estimators against plain-loop transcriptions of
 * docs/estimators.md, on seeded random batches of several shapes: lone trajectories, long
 * trajectories with many revisits, wide groups, tiny state spaces.
 */
const SHAPES: [string, SyntheticShape][] = [
  ['lone trajectories', { groups: 4, groupSize: 1, maxSteps: 6 }],
  ['small groups, short', { groups: 5, groupSize: 3, maxSteps: 4, statesPerGroup: 3 }],
  ['G=8, revisits', { groups: 3, groupSize: 8, maxSteps: 25, statesPerGroup: 5 }],
  [
    'wide groups, many states',
    { groups: 2, groupSize: 16, maxSteps: 12, statesPerGroup: 30, embeddingDim: 16 },
  ],
  ['tiny state space', { groups: 3, groupSize: 6, maxSteps: 10, statesPerGroup: 2 }],
];
const SEEDS = [1, 2, 3];
const cases = SHAPES.flatMap(([name, shape]) => SEEDS.map((seed) => [name, shape, seed] as const));

function run(batch: RolloutBatch, method: string, params: Record<string, unknown>) {
  const result = estimate(columnarBatchFromJson(batch), method, params);
  return {
    result,
    resolved: resolveParams(method, getMethod(method).params, params) as Record<string, any>,
  };
}

describe.each(cases)('%s, seed %i', (_name, shape, seed) => {
  const batch = syntheticBatchJson(shape, seed);

  test.each([
    [{}],
    [{ normalize: 'mean', episodeStats: 'steps', gamma: 0.8, stepWeight: 0.5 }],
    [{ similarityThreshold: 0.9 }],
    [{ similarityThreshold: 0.97, normalize: 'mean' }],
  ])('gigpo %j', (params) => {
    const { result, resolved } = run(batch, 'gigpo', params);
    expectClose(result.advantages, gigpoReference(batch, resolved), 1e-9, 'gigpo');
  });

  test.each([
    [{}],
    [{ lambda: 0.3, bootstrapTruncated: true, normalize: 'mean' }],
    [{ normalize: 'none', gamma: 1 }],
  ])('gagpo %j', (params) => {
    const { result, resolved } = run(batch, 'gagpo', params);
    expectClose(result.advantages, gagpoReference(batch, resolved), 1e-9, 'gagpo');
  });

  test.each([
    [{}],
    [{ gamma: 1, etaOn: 0.2, gateMinDistinctSuccessors: 3 }],
    [{ episodeStats: 'steps', lambda: 0.5 }],
  ])('gated-bepo %j', (params) => {
    const { result, resolved } = run(batch, 'gated-bepo', params);
    const ref = gatedBepoReference(batch, resolved);
    expectClose(result.diagnostics.value!, ref.V, 1e-8, 'V*');
    expectClose(result.advantages, ref.A, 1e-8, 'gated-bepo');
  });

  test.each([
    [{}],
    [{ estimator: 'diff_peer' }],
    [{ clusterEpsilon: 0.3, shrinkage: 2, normalize: 'mean' }],
  ])('bipace %j', (params) => {
    const { result, resolved } = run(batch, 'bipace', params);
    expectClose(result.advantages, bipaceReference(batch, resolved), 1e-9, 'bipace');
  });

  test.each([
    [{}],
    [{ debiased: true }],
    [{ alphaC: 0.3, singletonFallback: 'zero' }],
    [{ alphaC: 0.5, debiased: true }],
  ])('gaca %j', (params) => {
    const { result, resolved } = run(batch, 'gaca', params);
    expectClose(result.advantages, gacaReference(batch, resolved), 1e-9, 'gaca');
  });
});

test('difflib ratio equals the dict-based transliteration on random and long strings', () => {
  const rand = seededRandom(7);
  const alphabet = ['a', 'b', 'c', ' ', 'e', '1', 'é', '😀'];
  const randomText = (n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
  for (let n = 0; n < 300; n++) {
    const a = randomText(Math.floor(rand() * (n < 150 ? 40 : 450)));
    const b =
      rand() < 0.5
        ? randomText(a.length + Math.floor(rand() * 20))
        : a.slice(0, a.length / 2) + randomText(30);
    expect(sequenceRatio(a, b)).toBe(difflibRatio(a, b));
  }
});
