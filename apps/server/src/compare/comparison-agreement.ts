import {
  bootstrapGroups,
  groupOffsets,
  meanGroupCorrelation,
  meanGroupCorrelationScore,
  pearson,
  pooledPearsonScore,
  pooledSpearmanScore,
  signAgreement,
  signAgreementScore,
  spearman,
  type GroupedScore,
} from '@creditlab/stats';
import type {
  Agreement,
  AgreementIntervals,
  AgreementSlice,
  ComparisonIntervals,
  ReferenceDifference,
} from './compare.models';

/** Where each compared step sits: its task group (contiguous), its position and its iteration. */
export interface StepLayout {
  groupOf: Int32Array;
  stepIndex: Int32Array;
  iteration: Int32Array;
}

/** The layout of the steps at `keep` (in order): a comparison restricted to the steps a reference covers. */
export function subsetLayout(layout: StepLayout, keep: number[]): StepLayout {
  const pick = (x: Int32Array) => Int32Array.from(keep, (k) => x[k] as number);
  return {
    groupOf: pick(layout.groupOf),
    stepIndex: pick(layout.stepIndex),
    iteration: pick(layout.iteration),
  };
}

const POSITIONS = 10;

/** Pooled, within-group and sign agreement of two series, with breakdowns by position and iteration. */
export function agreementOf(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  layout: StepLayout,
): Agreement {
  const offsets = groupOffsets(layout.groupOf);
  const p = meanGroupCorrelation(a, b, offsets, 'pearson');
  const s = meanGroupCorrelation(a, b, offsets, 'spearman');
  const sign = signAgreement(a, b);
  return {
    pearson: pearson(a, b),
    spearman: spearman(a, b),
    groupPearson: p.mean,
    groupSpearman: s.mean,
    groupsCorrelated: p.groups,
    signAgreement: sign.agreement,
    bothNonzero: sign.bothNonzero,
    zeroFractionA: sign.zeroFractionA,
    zeroFractionB: sign.zeroFractionB,
    byPosition: slices(
      a,
      b,
      (k) => Math.min(layout.stepIndex[k] as number, POSITIONS),
      (key) => (key === POSITIONS ? `step ${POSITIONS}+` : `step ${key}`),
    ),
    byIteration: slices(
      a,
      b,
      (k) => layout.iteration[k] as number,
      (key) => `iteration ${key}`,
    ),
  };
}

function slices(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  keyOf: (k: number) => number,
  name: (key: number) => string,
): AgreementSlice[] {
  const members = new Map<number, number[]>();
  for (let k = 0; k < a.length; k++) {
    const key = keyOf(k);
    if (!members.has(key)) members.set(key, []);
    (members.get(key) as number[]).push(k);
  }
  return [...members.entries()]
    .sort(([x], [y]) => x - y)
    .map(([key, ks]) => {
      const x = Float64Array.from(ks, (k) => a[k] as number);
      const y = Float64Array.from(ks, (k) => b[k] as number);
      return {
        slice: name(key),
        steps: ks.length,
        pearson: pearson(x, y),
        signAgreement: signAgreement(x, y).agreement,
      };
    });
}

export interface IntervalOptions {
  resamples: number;
  level: number;
  seed: number;
}

const SCORES = ['pearson', 'spearman', 'groupPearson', 'signAgreement'] as const;

function scoresOf(a: ArrayLike<number>, b: ArrayLike<number>, offsets: Int32Array): GroupedScore[] {
  return [
    pooledPearsonScore(a, b, offsets),
    pooledSpearmanScore(a, b, offsets),
    meanGroupCorrelationScore(a, b, offsets),
    signAgreementScore(a, b, offsets),
  ];
}

/**
 * Bootstrap intervals (task groups resampled, one stream for all) of every pair's scores, every
 * method's scores against the reference, and every difference of two methods' reference scores.
 */
export function comparisonIntervals(
  series: { name: string; values: ArrayLike<number> }[],
  layout: StepLayout,
  reference: { field: string; values: Float64Array; keep: number[] } | null,
  options: IntervalOptions,
): ComparisonIntervals {
  const offsets = groupOffsets(layout.groupOf);
  const pairs: { a: string; b: string; scores: GroupedScore[] }[] = [];
  for (let i = 0; i < series.length; i++)
    for (let j = i + 1; j < series.length; j++)
      pairs.push({
        a: series[i]!.name,
        b: series[j]!.name,
        scores: scoresOf(series[i]!.values, series[j]!.values, offsets),
      });
  const boot = (scores: GroupedScore[], differences: [number, number][] = []) =>
    bootstrapGroups(scores, differences, options);
  const pairIntervals: AgreementIntervals[] = pairs.map(({ a, b, scores }) => {
    const r = boot(scores).scores;
    return { a, b, pearson: r[0]!, spearman: r[1]!, groupPearson: r[2]!, signAgreement: r[3]! };
  });
  let againstReference: AgreementIntervals[] = [];
  let referenceDifferences: ReferenceDifference[] = [];
  if (reference && reference.keep.length) {
    const sub = groupOffsets(subsetLayout(layout, reference.keep).groupOf);
    const per = series.map((s) =>
      scoresOf(
        Float64Array.from(reference.keep, (k) => s.values[k] as number),
        reference.values,
        sub,
      ),
    );
    const width = SCORES.length;
    const diffs: [number, number][] = [];
    const named: { a: string; b: string }[] = [];
    for (let i = 0; i < series.length; i++)
      for (let j = i + 1; j < series.length; j++) {
        named.push({ a: series[i]!.name, b: series[j]!.name });
        for (let s = 0; s < width; s++) diffs.push([i * width + s, j * width + s]);
      }
    const r = boot(per.flat(), diffs);
    againstReference = series.map((s, i) => ({
      a: s.name,
      b: reference.field,
      ...Object.fromEntries(SCORES.map((name, k) => [name, r.scores[i * width + k]!])),
    })) as AgreementIntervals[];
    referenceDifferences = named.map((n, d) => ({
      ...n,
      ...Object.fromEntries(SCORES.map((name, k) => [name, r.differences[d * width + k]!])),
    })) as ReferenceDifference[];
  }
  return {
    ...options,
    groups: offsets.length - 1,
    pairs: pairIntervals,
    againstReference,
    referenceDifferences,
  };
}
