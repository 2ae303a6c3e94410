import {
  bootstrapGroups,
  groupOffsets,
  groupRanks,
  holm,
  meanGroupCorrelation,
  meanGroupCorrelationScore,
  outcomeCredit,
  pairedTTest,
  pearson,
  pooledAndGroupRanks,
  pooledPearsonScore,
  pooledSpearmanScore,
  ranks,
  scoreOf,
  sortedFloat32,
  signAgreement,
  signAgreementScore,
  slicedAgreement,
  spearman,
} from '@creditlab/stats';
import { seededRandom } from '@creditlab/random';

test('sign agreement counts only steps where both are nonzero, and reports each side’s zeros', () => {
  const a = [1, -1, 0, 0, 2, -3, 0.5];
  const b = [2, 1, 0, 1, 0, -1, 0.1];
  // both nonzero: steps 0 (+,+), 1 (−,+), 5 (−,−), 6 (+,+): 3 of 4 agree; 0 = 0 (step 2) is not agreement
  expect(signAgreement(a, b)).toEqual({
    steps: 7,
    bothNonzero: 4,
    agreement: 0.75,
    zeroFractionA: 2 / 7,
    zeroFractionB: 2 / 7,
  });
  expect(signAgreement([0, 0], [1, -1]).agreement).toBeNull();
  expect(scoreOf(signAgreementScore(a, b, Int32Array.from([0, 3, 7])))).toBe(0.75);
});

test('per-group correlation is the mean of within-group correlations, which pooling can reverse', () => {
  // two groups: within each, a and b move in opposite directions; between them, both jump up
  const a = [0, 1, 2, 10, 11, 12];
  const b = [2, 1, 0, 12, 11, 10];
  const groupOf = [0, 0, 0, 1, 1, 1];
  const offsets = groupOffsets(groupOf);
  expect(Array.from(offsets)).toEqual([0, 3, 6]);
  expect(pearson(a, b)!).toBeGreaterThan(0.9);
  expect(meanGroupCorrelation(a, b, offsets)).toEqual({ mean: -1, groups: 2 });
  expect(scoreOf(meanGroupCorrelationScore(a, b, offsets))).toBe(-1);
  // a group with a constant side has no correlation and is left out
  expect(meanGroupCorrelation([1, 1, 0, 1], [1, 2, 0, 1], Int32Array.from([0, 2, 4]))).toEqual({
    mean: 1,
    groups: 1,
  });
  const r = Array.from({ length: 50 }, (_, i) => Math.sin(i));
  const s = r.map((v, i) => v + Math.cos(3 * i));
  expect(scoreOf(pooledPearsonScore(r, s, Int32Array.from([0, 20, 50])))).toBeCloseTo(
    pearson(r, s)!,
    12,
  );
  expect(scoreOf(pooledSpearmanScore(r, s, Int32Array.from([0, 20, 50])))).toBeCloseTo(
    spearman(r, s)!,
    12,
  );
});

/** Ranks by definition: 1 + the number of smaller values + half the number of other equal ones (as float32). */
function naiveRanks(x: number[]): number[] {
  const f = x.map(Math.fround);
  return f.map(
    (v) => 1 + f.filter((w) => w < v).length + (f.filter((w) => w === v).length - 1) / 2,
  );
}

test('ranks: ties averaged, −0 tied with +0, values compared as float32, below and above the radix threshold', () => {
  const rand = seededRandom(11);
  for (const n of [0, 1, 7, 1023, 1024, 3000]) {
    const x = Array.from({ length: n }, (_, i) =>
      i % 5 === 0 ? Math.round(rand() * 6 - 3) : i % 7 === 0 ? -0 : (rand() - 0.5) * 10 ** (i % 4),
    );
    if (n > 2) x[1] = 1 + 1e-12; // equal to 1 as float32
    expect(Array.from(ranks(x))).toEqual(naiveRanks(x));
    const sorted = Array.from(Float32Array.from(x).sort(), (v) => (v === 0 ? 0 : v));
    expect(Array.from(sortedFloat32(x))).toEqual(sorted);
    // The ranks' own sort gives the sorted values too (compare's quantiles).
    const halves = Int32Array.of(0, Math.floor(n / 2), n);
    expect(Array.from(pooledAndGroupRanks(x, halves).sorted)).toEqual(sorted);
  }
});

test('agreement within slices equals pearson and signAgreement on each slice copied out, to the last bit', () => {
  const rand = seededRandom(5);
  const n = 500;
  const sliceOf = Int32Array.from({ length: n }, (_, k) => (k * 7919) % 4); // interleaved slices
  const a = Float32Array.from({ length: n }, (_, k) => (k % 9 === 0 ? 0 : rand() - 0.5));
  const b = Float32Array.from({ length: n }, (_, k) =>
    sliceOf[k] === 3 ? 0.25 : k % 11 === 0 ? 0 : rand() - 0.3,
  );
  const got = slicedAgreement(a, b, sliceOf, 5); // slice 4 has no steps
  for (let s = 0; s < 4; s++) {
    const ks = [...sliceOf.keys()].filter((k) => sliceOf[k] === s);
    const x = ks.map((k) => a[k]!);
    const y = ks.map((k) => b[k]!);
    expect(got[s]).toEqual({
      steps: ks.length,
      pearson: pearson(x, y),
      signAgreement: signAgreement(x, y).agreement,
    });
  }
  expect(got[3]!.pearson).toBeNull(); // a constant side
  expect(got[4]).toEqual({ steps: 0, pearson: null, signAgreement: null });
});

test('ranks within groups, correlated by Pearson, are Spearman within groups exactly (ties, singletons, constant groups)', () => {
  const rand = seededRandom(7);
  const sizes = [1, 2, 5, 9, 3, 4, 12];
  const offsets = Int32Array.from(sizes.reduce((o, n) => [...o, o[o.length - 1]! + n], [0]));
  const n = offsets[offsets.length - 1]!;
  // rounded so that ties occur; group 3 is constant on one side
  const a = Float32Array.from({ length: n }, () => Math.round(rand() * 4) / 4);
  const b = Float32Array.from({ length: n }, (_, k) => (k >= 8 && k < 17 ? 1 : rand() - 0.5));
  const ra = groupRanks(a, offsets);
  for (let g = 0; g + 1 < offsets.length; g++) {
    const from = offsets[g]!;
    const to = offsets[g + 1]!;
    expect(Array.from(ra.subarray(from, to))).toEqual(Array.from(ranks(a.subarray(from, to))));
  }
  expect(Array.from(ra.subarray(0, 1))).toEqual([1]);
  expect(meanGroupCorrelation(ra, groupRanks(b, offsets), offsets, 'pearson')).toEqual(
    meanGroupCorrelation(Array.from(a), Array.from(b), offsets, 'spearman'),
  );
  expect(pearson(ranks(a), ranks(b))).toBe(spearman(Array.from(a), Array.from(b)));
});

/** Steps in `groups` groups of 8: b = a + noise of the given size. */
function synthetic(groups: number, noise: number, seed: number) {
  const rand = seededRandom(seed);
  const a: number[] = [];
  const b: number[] = [];
  const groupOf: number[] = [];
  for (let g = 0; g < groups; g++)
    for (let i = 0; i < 8; i++) {
      const x = rand() - 0.5;
      a.push(x);
      b.push(x + noise * (rand() - 0.5));
      groupOf.push(g);
    }
  return { a, b, offsets: groupOffsets(groupOf) };
}

test('the group bootstrap is deterministic given its seed, covers its estimate, narrows with more groups, and gives a method against itself a zero difference', () => {
  const small = synthetic(10, 1, 1);
  const large = synthetic(160, 1, 1);
  const run = (d: typeof small, seed: number) =>
    bootstrapGroups(
      [
        pooledPearsonScore(d.a, d.b, d.offsets),
        pooledPearsonScore(d.a, d.a, d.offsets),
        signAgreementScore(d.a, d.b, d.offsets),
      ],
      [
        [0, 1],
        [1, 1],
      ],
      { resamples: 400, seed },
    );
  const s = run(small, 7);
  expect(run(small, 7)).toEqual(s);
  expect(run(small, 8)).not.toEqual(s);
  const [r] = s.scores;
  expect(r!.low!).toBeLessThanOrEqual(r!.estimate!);
  expect(r!.high!).toBeGreaterThanOrEqual(r!.estimate!);
  expect(r!.estimate).toBeCloseTo(pearson(small.a, small.b)!, 12);
  const l = run(large, 7).scores[0]!;
  expect(l.high! - l.low!).toBeLessThan((r!.high! - r!.low!) / 2);
  expect(s.differences[1]).toEqual({ estimate: 0, low: 0, high: 0 });
  // a perfect correlation minus a noisy one: a negative difference, and the whole interval below 0
  expect(s.differences[0]!.high!).toBeLessThan(0);
});

test('the group bootstrap covers the true correlation at about its level (coverage over 200 synthetic data sets)', () => {
  // b = a + noise: true pooled correlation 1/√(1 + noise²) for uniform a and noise of equal spread
  const noise = 1;
  const truth = 1 / Math.sqrt(1 + noise * noise);
  let covered = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const d = synthetic(30, noise, seed * 101);
    const [r] = bootstrapGroups([pooledPearsonScore(d.a, d.b, d.offsets)], [], {
      resamples: 300,
      seed,
    }).scores;
    if (r!.low! <= truth && truth <= r!.high!) covered++;
  }
  expect(covered / 200).toBeGreaterThan(0.88);
  expect(covered / 200).toBeLessThanOrEqual(0.99);
});

test('the paired t-test matches an independent computation of t and its two-sided p', () => {
  // reference: t by hand, p by numerical integration of Student's density (numpy)
  const t1 = pairedTTest([1, 2, 3, 4, 5], [0, 0, 0, 0, 0]);
  expect(t1.t).toBeCloseTo(4.242640687119285, 12);
  expect(t1.df).toBe(4);
  expect(t1.p).toBeCloseTo(0.0132355996, 8);
  const d = [0.1, -0.05, 0.2, 0.15, 0.02, 0.08, -0.01, 0.12, 0.05, 0.09];
  const t2 = pairedTTest(
    d.map((x) => x + 0.5),
    d.map(() => 0.5),
  );
  expect(t2.meanDifference).toBeCloseTo(0.075, 12);
  expect(t2.t).toBeCloseTo(3.1614971399392453, 10);
  expect(t2.p).toBeCloseTo(0.01152244, 8);
  expect(t2.low).toBeLessThan(0.075);
  expect(t2.high).toBeGreaterThan(0.075);
  // the interval excludes 0 exactly when p < 0.05
  expect(t2.low).toBeGreaterThan(0);
  expect(pairedTTest([1, 1], [1, 1]).p).toBe(1);
  expect(pairedTTest([2, 2], [1, 1]).p).toBe(0);
  expect(() => pairedTTest([1], [2])).toThrow(/at least 2/);
});

test('Holm’s adjustment: step-down multipliers m, m − 1, …, kept monotone, in the input order', () => {
  // sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → raised to 0.06
  expect(holm([0.01, 0.04, 0.03, 0.005])).toEqual([0.03, 0.06, 0.06, 0.02]);
  expect(holm([0.5, 0.9])).toEqual([1, 1]);
  expect(holm([])).toEqual([]);
});

test('credit against the episode is judged by the trajectory’s outcome', () => {
  expect(outcomeCredit([1, -1, 0, 2, -2, 0], [0, 0, 0, 1, 1, 1])).toEqual({
    goodInFailed: 1,
    badInSucceeded: 1,
    stepsInFailed: 3,
    stepsInSucceeded: 3,
  });
});
