import { bootstrapGroups, type BootstrapOptions, type Interval } from './bootstrap';
import {
  meanGroupCorrelationScore,
  pooledPearsonScore,
  pooledSpearmanScore,
  signAgreementScore,
  type GroupedScore,
} from './grouped-scores';

/**
 * The agreement scores of one series with another, in this order: pooled Pearson and Spearman,
 * within-group (per task) Pearson and Spearman averaged over groups, and sign agreement over the
 * steps where both are nonzero. The server's `compare` and the experiment reports share them.
 */
export const AGREEMENT_SCORES = [
  'pearson',
  'spearman',
  'groupPearson',
  'groupSpearman',
  'signAgreement',
] as const;

export type AgreementScore = (typeof AGREEMENT_SCORES)[number];

/** Each agreement score with its bootstrap interval. */
export type AgreementIntervals = Record<AgreementScore, Interval>;

/** The grouped scores of a against b, in AGREEMENT_SCORES order. */
export function agreementScores(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
): GroupedScore[] {
  return [
    pooledPearsonScore(a, b, offsets),
    pooledSpearmanScore(a, b, offsets),
    meanGroupCorrelationScore(a, b, offsets, 'pearson'),
    meanGroupCorrelationScore(a, b, offsets, 'spearman'),
    signAgreementScore(a, b, offsets),
  ];
}

/** The scores' intervals, named, from `intervals` starting at `at`. */
function named(intervals: Interval[], at: number): AgreementIntervals {
  return Object.fromEntries(
    AGREEMENT_SCORES.map((name, k) => [name, intervals[at + k] as Interval]),
  ) as AgreementIntervals;
}

/** Every agreement score of a against b with its group-bootstrap interval. */
export function agreementIntervals(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
  options: BootstrapOptions,
): AgreementIntervals {
  return named(bootstrapGroups(agreementScores(a, b, offsets), [], options).scores, 0);
}

/**
 * Every series against one reference, and each listed difference [i, j] (series i's scores minus
 * series j's), from one bootstrap: a difference is taken resample by resample, so its interval
 * accounts for the two scores moving together on the same groups.
 */
export function referenceAgreementIntervals(
  series: ArrayLike<number>[],
  reference: ArrayLike<number>,
  offsets: Int32Array,
  differences: [number, number][],
  options: BootstrapOptions,
): { scores: AgreementIntervals[]; differences: AgreementIntervals[] } {
  const width = AGREEMENT_SCORES.length;
  const r = bootstrapGroups(
    series.flatMap((s) => agreementScores(s, reference, offsets)),
    differences.flatMap(([i, j]) =>
      AGREEMENT_SCORES.map((_, k): [number, number] => [i * width + k, j * width + k]),
    ),
    options,
  );
  return {
    scores: series.map((_, i) => named(r.scores, i * width)),
    differences: differences.map((_, d) => named(r.differences, d * width)),
  };
}
