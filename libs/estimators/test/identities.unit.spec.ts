import { columnarBatchFromJson, estimate, type ColumnarBatch } from '../src';
import { syntheticBatchJson, type SyntheticShape } from './support/synthetic-rollouts';
import { expectClose } from './support/tolerance';

/** Theorems that pin index and alignment bugs, checked on seeded random batches. */
const SHAPES: SyntheticShape[] = [
  { groups: 3, groupSize: 8, maxSteps: 20, statesPerGroup: 5 },
  { groups: 4, groupSize: 2, maxSteps: 6, statesPerGroup: 3 },
  { groups: 2, groupSize: 5, maxSteps: 30, statesPerGroup: 12 },
];
const batches = SHAPES.flatMap((shape, n) =>
  [11, 12].map(
    (seed) =>
      [`shape ${n}, seed ${seed}`, columnarBatchFromJson(syntheticBatchJson(shape, seed))] as const,
  ),
);

function discountedReturn(b: ColumnarBatch, gamma: number): number[] {
  const g = new Array<number>(b.stepCount);
  for (let i = 0; i < b.trajectoryCount; i++) {
    let acc = 0;
    for (let k = b.trajectoryStepOffsets[i + 1]! - 1; k >= b.trajectoryStepOffsets[i]!; k--)
      g[k] = acc = b.reward[k]! + gamma * acc;
  }
  return g;
}

describe.each(batches)('%s', (_name, batch) => {
  const n = batch.stepCount;
  const isLast = (k: number) => Array.from(batch.trajectoryStepOffsets).includes(k + 1);

  test('GAE with λ = 1 equals discounted return minus value', () => {
    const A = estimate(batch, 'ppo-gae', { gamma: 0.9, lambda: 1 }).advantages;
    const g = discountedReturn(batch, 0.9);
    expectClose(
      A,
      g.map((x, k) => x - batch.value[k]!),
      1e-12,
      'A',
    );
  });

  test('GAE with λ = 0 equals the one-step TD error', () => {
    const A = estimate(batch, 'ppo-gae', { gamma: 0.9, lambda: 0 }).advantages;
    const td = Array.from(
      { length: n },
      (_, k) => batch.reward[k]! + (isLast(k) ? 0 : 0.9 * batch.value[k + 1]!) - batch.value[k]!,
    );
    expectClose(A, td, 1e-12, 'A');
  });

  test("GAGPO with λ = 1 and no normalisation equals GiGPO's mean-norm step term", () => {
    const gagpo = estimate(batch, 'gagpo', { gamma: 0.9, lambda: 1, normalize: 'none' }).advantages;
    const gigpo = estimate(batch, 'gigpo', { gamma: 0.9, normalize: 'mean' }).diagnostics.advStep!;
    expectClose(gagpo, gigpo, 1e-12, 'A');
  });

  test('GACA with α_λ = β_λ = 0, λ0 = ½ and singleton fallback zero is half of GiGPO', () => {
    const params = { gamma: 0.9, stepWeight: 0.7 };
    const gaca = estimate(batch, 'gaca', {
      ...params,
      alphaLambda: 0,
      betaLambda: 0,
      lambda0: 0.5,
      singletonFallback: 'zero',
    });
    const gigpo = estimate(batch, 'gigpo', params).advantages;
    expectClose(
      gaca.advantages,
      gigpo.map((x) => x / 2),
      1e-12,
      'A',
    );
  });

  test('BiGPO with ε = 0 on one-hot state embeddings reproduces exact anchor groups', () => {
    const oneHot = withOneHotStateEmbeddings(batch);
    const bipace = estimate(oneHot, 'bipace', { clusterEpsilon: 0 });
    const gigpo = estimate(oneHot, 'gigpo', {});
    expect(Array.from(bipace.diagnostics.clusterId!)).toEqual(
      Array.from(gigpo.diagnostics.stepGroupId!),
    );
  });

  test('BiPACE with ε = 0 on dense state embeddings (identical per state) reproduces exact anchor groups', () => {
    // a unit vector's cosine with the renormalised sum of copies of itself is 1 only up to rounding
    // (one-hot vectors are exact; these are not): identical embeddings must still merge at ε = 0
    const dense = withDenseStateEmbeddings(batch, 32);
    const bipace = estimate(dense, 'bipace', { clusterEpsilon: 0 });
    const gigpo = estimate(dense, 'gigpo', {});
    expect(Array.from(bipace.diagnostics.clusterId!)).toEqual(
      Array.from(gigpo.diagnostics.stepGroupId!),
    );
  });

  test("Gated-BEPO's fixed point satisfies the Bellman equation; residuals leaving each state sum to 0", () => {
    // At the fixed point, mean over E(s) of δ = (T V)(s) − V(s) is the Bellman residual. The sweeps stop
    // once no value moves more than tol = 1e-10, which bounds that residual by γ·tol; the sum over E(s)
    // is then at most |E(s)|·γ·tol.
    for (const gamma of [0.95, 1]) {
      const r = estimate(batch, 'gated-bepo', { gamma });
      expect(r.summary.fixedPointConverged).toBe(true);
      const sums = new Map<number, { sum: number; edges: number }>();
      for (let k = 0; k < n; k++) {
        const acc = sums.get(batch.stateId[k]!) ?? { sum: 0, edges: 0 };
        acc.sum += r.diagnostics.delta![k]!;
        acc.edges++;
        sums.set(batch.stateId[k]!, acc);
      }
      for (const [state, { sum, edges }] of sums) {
        if (!(Math.abs(sum / edges) <= 1e-9))
          throw new Error(`γ=${gamma}: Bellman residual of state ${state} is ${sum / edges}`);
        if (!(Math.abs(sum) <= edges * 1e-10))
          throw new Error(`γ=${gamma}: residuals of state ${state} sum to ${sum}`);
      }
    }
  });

  test('Gated-BEPO with the gate forced open everywhere is its ungated form η_on·A^out + w·A^FP', () => {
    const r = estimate(batch, 'gated-bepo', {
      gateMinDistinctSuccessors: 1,
      etaOn: 0.3,
      stepWeight: 0.8,
    });
    expect(Array.from(r.diagnostics.gate!).every((x) => x === 1)).toBe(true);
    const { advEpisode, advStep } = r.diagnostics;
    expectClose(
      r.advantages,
      Array.from({ length: n }, (_, k) => 0.3 * advEpisode![k]! + 0.8 * advStep![k]!),
      1e-12,
      'A',
    );
  });

  test('normalised advantages are the same for rewards ×1e300, where squared deviations overflow, as for ×1e150', () => {
    // σ was ∞ past about 1e154, and every advantage of the group a silent 0.
    const scaled = (s: number) => ({ ...batch, reward: batch.reward.map((r) => r * s) });
    const methods: [string, Record<string, unknown>][] = [
      ['grpo', {}],
      ['gigpo', {}],
      ['gagpo', {}],
      ['ppo-gae', { whiten: 'batch_steps' }],
    ];
    for (const [method, params] of methods) {
      const far = estimate(scaled(1e300), method, params).advantages;
      expectClose(far, estimate(scaled(1e150), method, params).advantages, 1e-12, method);
      expect(far.some((a) => a !== 0)).toBe(true);
    }
  });

  test('RLOO is GRPO mean-norm scaled by G/(G−1)', () => {
    const rloo = estimate(batch, 'rloo', {}).advantages;
    const grpo = estimate(batch, 'grpo', { normalize: 'mean' }).advantages;
    const G = batch.groupTrajectoryOffsets[1]! - batch.groupTrajectoryOffsets[0]!; // every group has the same G here
    if (G > 1)
      expectClose(
        rloo,
        grpo.map((x) => (x * G) / (G - 1)),
        1e-12,
        'A',
      );
  });
});

/** Every state text's own dense float32 embedding (seeded), the same vector wherever the state recurs. */
function withDenseStateEmbeddings(b: ColumnarBatch, d: number): ColumnarBatch {
  let x = 12345;
  const next = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
  const byState = b.stateTexts.map(() => Float32Array.from({ length: d }, next));
  const embedding = new Float32Array(b.stepCount * d);
  for (let k = 0; k < b.stepCount; k++) embedding.set(byState[b.stateId[k]!]!, k * d);
  return { ...b, embedding, embeddingDim: d };
}

function withOneHotStateEmbeddings(b: ColumnarBatch): ColumnarBatch {
  const d = b.stateTexts.length;
  const embedding = new Float32Array(b.stepCount * d);
  for (let k = 0; k < b.stepCount; k++) embedding[k * d + b.stateId[k]!] = 1;
  return { ...b, embedding, embeddingDim: d };
}
