import { columnarBatchFromJson, estimate, sequenceRatio } from '../src';
import { expectClose } from './support/tolerance';
import { A, B, B2, C, KEY_BATCH, perTrajectory } from './support/key-fixture';

/**
 * The worked examples of docs/estimators.md §4 as golden tables: it prints 4 decimals,
 * so values must match to ±5e-5 (±1e-3 through the fixed-point iteration).
 * Rows are the 10 steps in canonical order: τ1·t1..t3, τ2·t1..t3, τ3·t1..t2, τ4·t1..t2.
 */
const batch = columnarBatchFromJson(KEY_BATCH);
const TOL = 5e-5;

function run(method: string, params: Record<string, unknown> = {}) {
  return estimate(batch, method, { gamma: 0.9, ...params });
}
function check(
  got: Float64Array | Int32Array | Uint8Array | undefined,
  want: number[],
  label: string,
  tol = TOL,
) {
  expect(got).toBeDefined();
  for (let k = 0; k < want.length; k++) {
    const w = want[k] as number;
    if (!(Math.abs((got![k] as number) - w) <= tol)) {
      throw new Error(`${label} row ${k}: got ${got![k]}, table says ${w}`);
    }
  }
  expect(got!.length).toBe(want.length);
}

test('§4.2 REINFORCE, reward-to-go, γ = 0.9', () => {
  check(run('reinforce').advantages, [0.81, 0.9, 1, -0.09, -0.1, 0, 0, 0, 0, 0], 'A');
});

test('§4.3 GRPO in both modes and with step-record statistics', () => {
  check(
    estimate(batch, 'grpo').advantages,
    perTrajectory([1.4938, -0.6264, -0.4337, -0.4337]),
    'mean-std',
  );
  check(
    estimate(batch, 'grpo', { normalize: 'mean' }).advantages,
    perTrajectory([0.775, -0.325, -0.225, -0.225]),
    'mean',
  );
  check(
    estimate(batch, 'grpo', { episodeStats: 'steps' }).advantages,
    perTrajectory([1.4437, -0.7318, -0.534, -0.534]),
    'steps',
  );
});

test('§4.4 RLOO', () => {
  check(estimate(batch, 'rloo').advantages, perTrajectory([1.0333, -0.4333, -0.3, -0.3]), 'A');
});

test('§4.5 PPO-GAE, γ = 0.9, λ = 0.95, with and without bootstrapping the truncated end', () => {
  const r = run('ppo-gae');
  check(
    r.diagnostics.delta,
    [0.285, 0.025, 0.25, -0.21, -0.155, -0.05, 0.06, -0.4, -0.21, -0.1],
    'δ',
  );
  check(
    r.advantages,
    [0.4891, 0.2388, 0.25, -0.3791, -0.1978, -0.05, -0.282, -0.4, -0.2955, -0.1],
    'A',
  );
  check(
    r.diagnostics.returnTarget,
    [0.7891, 0.8888, 1, -0.0791, -0.0978, 0, 0.018, 0, 0.0045, 0],
    'target',
  );
  check(
    run('ppo-gae', { bootstrapTruncated: true }).advantages,
    [0.4891, 0.2388, 0.25, -0.3791, -0.1978, -0.05, -0.282, -0.4, -0.2339, -0.028],
    'A bootstrap',
  );
});

describe('§4.6 GiGPO, γ = 0.9, w = 1', () => {
  test('exact anchor groups', () => {
    const r = run('gigpo');
    check(r.diagnostics.stepGroupSize, [4, 2, 2, 4, 3, 3, 4, 1, 4, 3], 'group size');
    check(r.diagnostics.advEpisode, perTrajectory([1.4938, -0.6264, -0.4337, -0.4337]), 'A^E');
    check(
      r.diagnostics.advStep,
      [1.4924, -0.7071, 0.7071, -0.6396, -1.1547, 0.5773, -0.4264, 0, -0.4264, 0.5773],
      'A^S',
    );
    check(
      r.advantages,
      [2.9862, 0.7867, 2.2009, -1.266, -1.7811, -0.0491, -0.8601, -0.4337, -0.8601, 0.1437],
      'A',
    );
  });
  test('mean normalisation', () => {
    check(
      run('gigpo', { normalize: 'mean' }).advantages,
      [1.405, 0.725, 0.825, -0.595, -0.3917, -0.2917, -0.405, -0.225, -0.405, -0.1917],
      'A',
    );
  });
  test('similarity grouping at θ = 0.9 merges B′ into B', () => {
    const r = run('gigpo', { similarityThreshold: 0.9 });
    check(r.diagnostics.stepGroupSize, [4, 3, 3, 4, 3, 3, 4, 3, 4, 3], 'group size');
    check(
      r.advantages,
      [2.9862, 1.978, 2.1595, -1.266, -1.7811, -0.0491, -0.8601, -1.5836, -0.8601, 0.1437],
      'A',
    );
  });
  test('episode statistics over step records (C3)', () => {
    check(
      run('gigpo', { episodeStats: 'steps' }).advantages,
      [2.9361, 0.7366, 2.1508, -1.3714, -1.8864, -0.1544, -0.9604, -0.534, -0.9604, 0.0434],
      'A',
    );
  });
});

describe('§4.7 GACA, γ = 0.9', () => {
  test('defaults', () => {
    const r = run('gaca');
    check(
      r.diagnostics.criticality,
      [1.0435, 1.4348, 0.5217, 0.878, 1.4634, 0.6585, 0.6364, 1.3636, 1.6667, 0.3333],
      'c',
    );
    check(
      r.diagnostics.lambda,
      [0.5435, 0.9348, 0.0217, 0.378, 0.9634, 0.1585, 0.1364, 0.8636, 1, 0],
      'λ',
    );
    check(
      r.advantages,
      [1.493, -0.5636, 1.4767, -0.6314, -1.1354, -0.4356, -0.4327, -0.4337, -0.4264, -0.4337],
      'A',
    );
  });
  test('singleton fallback zero', () => {
    const r = run('gaca', { singletonFallback: 'zero' });
    check(
      r.advantages,
      [1.493, -0.5636, 1.4767, -0.6314, -1.1354, -0.4356, -0.4327, -0.0591, -0.4264, -0.4337],
      'A',
    );
  });
  test('α_c = 0.5 mixes in the return change', () => {
    const r = run('gaca', { alphaC: 0.5 });
    check(
      r.diagnostics.criticality,
      [0.5217, 1.4279, 1.0503, 0.439, 0.8681, 1.6929, 0.8182, 1.1818, 1.3333, 0.6667],
      'c',
    );
    check(
      r.diagnostics.lambda,
      [0.0217, 0.9279, 0.5503, 0, 0.3681, 1, 0.3182, 0.6818, 0.8333, 0.1667],
      'λ',
    );
    check(
      r.advantages,
      [1.4938, -0.5485, 1.0608, -0.6264, -0.8209, 0.5773, -0.4314, -0.4337, -0.4276, -0.2652],
      'A',
    );
  });
  test('modulation off = ½(A^S + A^E)', () => {
    const r = run('gaca', { alphaLambda: 0, betaLambda: 0 });
    check(
      r.advantages,
      [1.4931, 0.3933, 1.1004, -0.633, -0.8906, -0.0245, -0.43, -0.4337, -0.43, 0.0718],
      'A',
    );
  });
  test('debiased (leave-one-out NLL)', () => {
    const r = run('gaca', { debiased: true });
    check(
      r.diagnostics.criticality,
      [1.1757, 0.4865, 1.3378, 1.0067, 0.6644, 1.3289, 1, 1, 0.766, 1.234],
      'c',
    );
    check(
      r.diagnostics.lambda,
      [0.6757, 0, 0.8378, 0.5067, 0.1644, 0.8289, 0.5, 0.5, 0.266, 0.734],
      'λ',
    );
    check(
      r.advantages,
      [1.4929, 1.4938, 0.8347, -0.6331, -0.7133, 0.3713, -0.43, -0.4337, -0.4317, 0.3085],
      'A',
    );
  });
});

describe('§4.8 Gated-BEPO, γ = 0.9, λ = 0.95', () => {
  test('fixed point, gate and advantages', () => {
    const r = run('gated-bepo');
    check(
      r.diagnostics.value,
      [
        0.183117, 0.909091, 0.909091, 0.183117, -0.047619, -0.047619, 0.183117, 0, 0.183117,
        -0.047619,
      ],
      'V*',
      1e-6,
    );
    check(r.diagnostics.gate, [1, 1, 1, 1, 1, 1, 1, 0, 1, 1], 'ρ');
    check(r.diagnostics.eta, [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1, 0.5, 0.5], 'η');
    check(
      r.diagnostics.delta,
      [0.6351, -0.0909, 0.0909, -0.226, -0.0952, 0.0476, -0.1831, 0, -0.226, 0.0476],
      'δ',
      1e-3,
    );
    check(
      r.diagnostics.advStep,
      [0.6238, -0.0132, 0.0909, -0.2726, -0.0545, 0.0476, -0.1831, 0, -0.1853, 0.0476],
      'A^FP',
      1e-3,
    );
    check(
      r.advantages,
      [1.3707, 0.7337, 0.8378, -0.5858, -0.3677, -0.2656, -0.4, -0.4337, -0.4021, -0.1692],
      'A',
      1e-3,
    );
  });
  test('γ = 1 still has a fixed point', () => {
    const r = run('gated-bepo', { gamma: 1 });
    expect(r.summary.fixedPointConverged).toBe(true);
    check(
      r.diagnostics.value,
      [0.225, 1, 1, 0.225, -0.05, -0.05, 0.225, 0, 0.225, -0.05],
      'V*',
      1e-6,
    );
  });
});

test('§4.9 GAGPO, γ = 0.9, λ = 0.95', () => {
  check(
    run('gagpo').diagnostics.value,
    [0.18, 0.95, 0.95, 0.18, -0.0333, -0.0333, 0.18, 0, 0.18, -0.0333],
    'V̂',
  );
  check(
    run('gagpo').advantages,
    [2.5587, -0.2107, 0.2042, -1.0872, -0.2753, 0.1365, -0.729, 0.0013, -0.7351, 0.1365],
    'A',
  );
  check(
    run('gagpo', { lambda: 0 }).advantages,
    [2.6157, -0.3681, 0.1938, -0.8138, -0.3746, 0.1292, -0.6975, 0, -0.8138, 0.1292],
    'λ=0',
  );
  check(
    run('gagpo', { lambda: 1, normalize: 'none' }).advantages,
    [0.63, -0.05, 0.05, -0.27, -0.0667, 0.0333, -0.18, 0, -0.18, 0.0333],
    'λ=1 raw',
  );
  check(
    run('gagpo', { bootstrapTruncated: true }).advantages,
    [2.5614, -0.1867, 0.225, -1.0564, -0.2507, 0.1579, -0.701, 0.0237, -0.8103, 0.0371],
    'bootstrap',
  );
});

describe('§4.10 BiPACE, γ = 0.9, ε = 0.1', () => {
  test('q_style', () => {
    const r = run('bipace');
    check(r.diagnostics.clusterId, [0, 1, 1, 0, 2, 2, 0, 1, 0, 2], 'cluster');
    check(r.diagnostics.q, [0.405, 0.9, 1, -0.045, -0.1, 0, 0.405, 0, -0.045, 0], 'Q̂');
    check(
      r.diagnostics.advStep,
      [0.533, 0.4842, 0.6657, -0.533, -1.1547, 0.5773, 0.533, -1.1499, -0.533, 0.5773],
      'A^S',
    );
    check(
      r.advantages,
      [2.0268, 1.978, 2.1595, -1.1594, -1.7811, -0.0491, 0.0993, -1.5836, -0.9667, 0.1437],
      'A',
    );
    expect(r.summary.clusterCount).toBe(3);
    expect(r.summary.singletonRate).toBe(0);
  });
  test('diff_peer', () => {
    const r = run('bipace', { estimator: 'diff_peer' });
    check(
      r.diagnostics.advStep,
      [2.0254, 0.7263, 0.9986, -1.1726, -1.732, 0.866, 0.1066, -1.7249, -0.9594, 0.866],
      'A^S',
    );
    check(
      r.advantages,
      [3.5192, 2.2201, 2.4924, -1.799, -2.3584, 0.2396, -0.3271, -2.1586, -1.3931, 0.4323],
      'A',
    );
  });
  test('q_style on exact-hash groups: one-hot state embeddings with ε = 0', () => {
    const states = [A, B, B2, C];
    const oneHot = structuredClone(KEY_BATCH);
    for (const t of oneHot.groups[0]!.trajectories) {
      for (const s of t.steps) s.embedding = states.map((x) => (x === s.state ? 1 : 0));
    }
    const r = estimate(columnarBatchFromJson(oneHot), 'bipace', { gamma: 0.9, clusterEpsilon: 0 });
    check(
      r.advantages,
      [2.0268, 0.7867, 2.2009, -1.1594, -1.7811, -0.0491, 0.0993, -0.4337, -0.9667, 0.1437],
      'A',
    );
  });
});

test('§4.12 difflib ratio test vectors (CPython SequenceMatcher)', () => {
  const S = 'You arrive at cabinet 1. On the cabinet 1, you see a bowl 1, a cup 2, and a spoon 3. ';
  const L1 = S.repeat(3);
  const L2 = L1.replaceAll('spoon 3', 'knife 2').replaceAll('cup 2', 'mug 1');
  const vectors: [string, string, number, number][] = [
    [B2, B, 0.906977, 0.906977],
    ['abcd', 'bcde', 0.75, 0.75],
    ['kitten', 'sitting', 0.615385, 0.615385],
    ['', '', 1, 1],
    ['abc', '', 0, 0],
    ['go to cabinet 1', 'go to cabinet 2', 0.933333, 0.933333],
    [L1, L2, 0.780392, 0.85098],
  ];
  expect(L1).toHaveLength(255);
  for (const [a, b, ab, ba] of vectors) {
    expectClose(
      [sequenceRatio(a, b), sequenceRatio(b, a)],
      [ab, ba],
      1e-6,
      `ratio(${a.slice(0, 12)}…)`,
    );
  }
});
