import {
  agreementIntervals,
  groupOffsets,
  meanGroupCorrelation,
  pearson,
  pooledAndGroupRanks,
  referenceAgreementIntervals,
  signAgreement,
  slicedAgreement,
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

/** Steps split into slices (by position, or by iteration): each step's slice, and the slices' names. */
interface Slicing {
  sliceOf: Int32Array;
  names: string[];
}

/**
 * A layout with what every pair of a comparison needs from it, worked out once rather than per
 * pair: the task groups' offsets and each step's position and iteration slice.
 */
export interface PreparedLayout {
  offsets: Int32Array;
  byPosition: Slicing;
  byIteration: Slicing;
}

/**
 * A series with its ranks, pooled and within each task group, and its values sorted: ranked once,
 * whatever its pairs.
 */
export interface RankedSeries {
  values: ArrayLike<number>;
  ranks: Float64Array;
  groupRanks: Float64Array;
  sorted: Float32Array;
}

export function prepareLayout(layout: StepLayout): PreparedLayout {
  return {
    offsets: groupOffsets(layout.groupOf),
    byPosition: slicing(
      layout.stepIndex.length,
      (k) => Math.min(layout.stepIndex[k] as number, POSITIONS),
      (key) => (key === POSITIONS ? `step ${POSITIONS}+` : `step ${key}`),
    ),
    byIteration: slicing(
      layout.iteration.length,
      (k) => layout.iteration[k] as number,
      (key) => `iteration ${key}`,
    ),
  };
}

export function rankSeries(values: ArrayLike<number>, layout: PreparedLayout): RankedSeries {
  return { values, ...pooledAndGroupRanks(values, layout.offsets) };
}

/**
 * Pooled, within-group and sign agreement of two series, with breakdowns by position and iteration.
 * Spearman is Pearson on the ranks, so the ranks computed once per series serve every pair.
 */
export function agreementOf(a: RankedSeries, b: RankedSeries, layout: PreparedLayout): Agreement {
  const p = meanGroupCorrelation(a.values, b.values, layout.offsets, 'pearson');
  const s = meanGroupCorrelation(a.groupRanks, b.groupRanks, layout.offsets, 'pearson');
  const sign = signAgreement(a.values, b.values);
  return {
    pearson: pearson(a.values, b.values),
    spearman: pearson(a.ranks, b.ranks),
    groupPearson: p.mean,
    groupSpearman: s.mean,
    groupsCorrelated: p.groups,
    signAgreement: sign.agreement,
    bothNonzero: sign.bothNonzero,
    zeroFractionA: sign.zeroFractionA,
    zeroFractionB: sign.zeroFractionB,
    byPosition: sliceAgreement(a.values, b.values, layout.byPosition),
    byIteration: sliceAgreement(a.values, b.values, layout.byIteration),
  };
}

/** n steps sliced by key, slices in ascending order of their keys. */
function slicing(n: number, keyOf: (k: number) => number, name: (key: number) => string): Slicing {
  const keys = new Int32Array(n);
  for (let k = 0; k < n; k++) keys[k] = keyOf(k);
  const distinct = [...new Set(keys)].sort((x, y) => x - y);
  const slot = new Map(distinct.map((key, s) => [key, s]));
  return {
    sliceOf: keys.map((key) => slot.get(key) as number),
    names: distinct.map(name),
  };
}

function sliceAgreement(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  { sliceOf, names }: Slicing,
): AgreementSlice[] {
  return slicedAgreement(a, b, sliceOf, names.length).map((r, s) => ({
    slice: names[s] as string,
    ...r,
  }));
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
    return {
      a: a.name,
      b: b.name,
      aIndex: i,
      bIndex: j,
      ...agreementIntervals(a.values, b.values, offsets, options),
    };
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
    againstReference: series.map((s, i) => ({
      a: s.name,
      b: reference.field,
      aIndex: i,
      bIndex: null,
      ...r.scores[i]!,
    })),
    referenceDifferences: pairs.map(([i, j], d) => ({
      a: series[i]!.name,
      b: series[j]!.name,
      aIndex: i,
      bIndex: j,
      ...r.differences[d]!,
    })),
  };
}
