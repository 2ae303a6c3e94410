import { seededRandom } from '@creditlab/random';
import type { GroupedScore } from './grouped-scores';

/** A point estimate with a percentile bootstrap interval; bounds null when too few resamples were defined. */
export interface Interval {
  estimate: number | null;
  low: number | null;
  high: number | null;
}

export interface BootstrapOptions {
  /** Resamples (default 1000). */
  resamples?: number;
  /** Coverage of the interval (default 0.95). */
  level?: number;
  /** Seed of the resampling stream (default 1): the same inputs and seed give the same intervals. */
  seed?: number;
}

/**
 * Cluster (group) bootstrap: resample the G groups with replacement, B times, and recompute every
 * score, and every listed difference score[i] − score[j] on the same resample, so that a difference's
 * interval accounts for the two scores moving together. Groups, not steps, are the unit: steps of one
 * task group share their task and their rollouts, so resampling steps would understate the spread.
 * Percentile intervals; a score undefined on more than 5 % of resamples gets no interval.
 * Every score must have the same number of groups.
 */
export function bootstrapGroups(
  scores: GroupedScore[],
  differences: [number, number][] = [],
  options: BootstrapOptions = {},
): { scores: Interval[]; differences: Interval[] } {
  const groups = scores.length
    ? (scores[0] as GroupedScore).stats.length / (scores[0] as GroupedScore).width
    : 0;
  for (const s of scores)
    if (s.stats.length / s.width !== groups)
      throw new Error('bootstrapGroups: scores over different groups');
  return bootstrapWeighted(
    groups,
    scores.length,
    (weights, out) => scores.forEach((s, m) => (out[m] = s.score(weightedSum(s, weights)))),
    differences,
    options,
  );
}

/**
 * The same cluster bootstrap for scores that are any function of the groups' multiplicities (a
 * cosine of summed vectors is not a function of summed fixed-width statistics): `evaluate` writes
 * the `count` scores for the multiplicities `weights` (one per group, summing to the group count)
 * into `out`. All-ones weights give the point estimates. Same resampling stream as bootstrapGroups,
 * so the same seed draws the same resamples.
 */
export function bootstrapWeighted(
  groups: number,
  count: number,
  evaluate: (weights: Float64Array, out: Float64Array) => void,
  differences: [number, number][] = [],
  options: BootstrapOptions = {},
): { scores: Interval[]; differences: Interval[] } {
  const B = options.resamples ?? 1000;
  const alpha = (1 - (options.level ?? 0.95)) / 2;
  const rand = seededRandom(options.seed ?? 1);
  const draws = Array.from({ length: count }, () => new Float64Array(B));
  const weights = new Float64Array(groups);
  const out = new Float64Array(count);
  for (let r = 0; r < B; r++) {
    weights.fill(0);
    for (let i = 0; i < groups; i++) add(weights, Math.floor(rand() * groups), 1);
    evaluate(weights, out);
    for (let m = 0; m < count; m++) (draws[m] as Float64Array)[r] = out[m] as number;
  }
  const interval = (estimate: number, values: Float64Array): Interval => {
    const defined = Float64Array.from(values.filter((v) => !Number.isNaN(v))).sort();
    const ok = groups > 0 && defined.length >= 0.95 * B;
    return {
      estimate: Number.isNaN(estimate) ? null : estimate,
      low: ok ? percentile(defined, alpha) : null,
      high: ok ? percentile(defined, 1 - alpha) : null,
    };
  };
  const estimates = new Float64Array(count);
  evaluate(new Float64Array(groups).fill(1), estimates);
  return {
    scores: draws.map((d, m) => interval(estimates[m] as number, d)),
    differences: differences.map(([i, j]) => {
      const a = draws[i] as Float64Array;
      const b = draws[j] as Float64Array;
      return interval(
        (estimates[i] as number) - (estimates[j] as number),
        a.map((v, r) => v - (b[r] as number)),
      );
    }),
  };
}

function weightedSum(s: GroupedScore, weights: Float64Array): Float64Array {
  const sum = new Float64Array(s.width);
  for (let g = 0; g < weights.length; g++) {
    const w = weights[g] as number;
    if (w === 0) continue;
    for (let j = 0; j < s.width; j++) add(sum, j, w * (s.stats[g * s.width + j] as number));
  }
  return sum;
}

/** Linear interpolation between closest ranks (numpy's default). */
function percentile(sorted: Float64Array, q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

/** x[i] += v on a typed array (under noUncheckedIndexedAccess). */
function add(x: Float64Array, i: number, v: number): void {
  x[i] = (x[i] as number) + v;
}
