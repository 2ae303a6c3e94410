import {
  agreementIntervals,
  groupOffsets,
  meanGroupCorrelation,
  pearson,
  referenceAgreementIntervals,
  signAgreement,
  spearman,
} from '@creditlab/stats';
import type {
  Agreement,
  AgreementIntervals,
  AgreementSlice,
  ComparisonIntervals,
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

/**
 * Bootstrap intervals (task groups resampled, one stream for all) of every pair's scores, every
 * method's scores against the reference, and every difference of two methods' reference scores.
 */
export function comparisonIntervals(
  series: Series[],
  layout: StepLayout,
  reference: Reference | null,
  options: IntervalOptions,
): ComparisonIntervals {
  const offsets = groupOffsets(layout.groupOf);
  const againstTheReference =
    reference && reference.keep.length
      ? referenceIntervals(series, layout, reference, options)
      : { againstReference: [], referenceDifferences: [] };
  return {
    ...options,
    groups: offsets.length - 1,
    pairs: pairIntervals(series, offsets, options),
    ...againstTheReference,
  };
}

interface Series {
  name: string;
  values: ArrayLike<number>;
}

/** A reference series over the steps at `keep` (the steps it covers), named by its field. */
interface Reference {
  field: string;
  values: Float64Array;
  keep: number[];
}

/** Every unordered pair [i, j], i < j, of `n` items, in order. */
function everyPair(n: number): [number, number][] {
  const pairs: [number, number][] = [];
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) pairs.push([i, j]);
  return pairs;
}

/** Each pair of series against each other: one bootstrap per pair, every one from the same seed. */
function pairIntervals(
  series: Series[],
  offsets: Int32Array,
  options: IntervalOptions,
): AgreementIntervals[] {
  return everyPair(series.length).map(([i, j]) => {
    const a = series[i]!;
    const b = series[j]!;
    return { a: a.name, b: b.name, ...agreementIntervals(a.values, b.values, offsets, options) };
  });
}

/**
 * Every series against the reference on the steps it covers, and every difference of two series'
 * reference scores: one bootstrap for all of them, so the differences are paired resample by resample.
 */
function referenceIntervals(
  series: Series[],
  layout: StepLayout,
  reference: Reference,
  options: IntervalOptions,
): Pick<ComparisonIntervals, 'againstReference' | 'referenceDifferences'> {
  const offsets = groupOffsets(subsetLayout(layout, reference.keep).groupOf);
  const pairs = everyPair(series.length);
  const r = referenceAgreementIntervals(
    series.map((s) => Float64Array.from(reference.keep, (k) => s.values[k] as number)),
    reference.values,
    offsets,
    pairs,
    options,
  );
  return {
    againstReference: series.map((s, i) => ({ a: s.name, b: reference.field, ...r.scores[i]! })),
    referenceDifferences: pairs.map(([i, j], d) => ({
      a: series[i]!.name,
      b: series[j]!.name,
      ...r.differences[d]!,
    })),
  };
}
