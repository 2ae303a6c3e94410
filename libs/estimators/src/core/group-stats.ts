import { typedReads } from '../typed-arrays';
import type { StepGroups } from './step-groups';

const { at, intAt } = typedReads;

export type Normalize = 'mean-std' | 'mean';

/** Mean and unbiased std of the values in each of `groupCount` buckets. */
export interface GroupStats {
  count: Int32Array;
  mean: Float64Array;
  /** Unbiased (n−1) standard deviation; NaN for buckets with fewer than 2 members. */
  std: Float64Array;
}

/**
 * Per-bucket statistics of `values[k]` grouped by `bucketOf[k]` (two passes,
 * O(n + buckets)). A bucket whose members are all equal gets exactly its value
 * as mean and exactly 0 as std, so "all equal → advantage 0" holds exactly,
 * not up to rounding (docs/estimators.md §1.7 keeps the exact answer).
 */
export function groupStats(
  values: Float64Array,
  bucketOf: Int32Array,
  bucketCount: number,
): GroupStats {
  const count = new Int32Array(bucketCount);
  const sum = new Float64Array(bucketCount);
  const first = new Float64Array(bucketCount);
  const allEqual = new Uint8Array(bucketCount).fill(1);
  const n = values.length;
  for (let k = 0; k < n; k++) {
    const b = intAt(bucketOf, k);
    const x = at(values, k);
    if (count[b] === 0) first[b] = x;
    else if (x !== first[b]) allEqual[b] = 0;
    count[b] = intAt(count, b) + 1;
    sum[b] = at(sum, b) + x;
  }
  const mean = new Float64Array(bucketCount);
  for (let b = 0; b < bucketCount; b++) {
    mean[b] = allEqual[b] ? at(first, b) : at(sum, b) / intAt(count, b);
  }
  const ss = new Float64Array(bucketCount);
  for (let k = 0; k < n; k++) {
    const b = intAt(bucketOf, k);
    const d = at(values, k) - at(mean, b);
    ss[b] = at(ss, b) + d * d;
  }
  const std = new Float64Array(bucketCount);
  for (let b = 0; b < bucketCount; b++) {
    const c = intAt(count, b);
    std[b] = c < 2 ? NaN : allEqual[b] ? 0 : Math.sqrt(at(ss, b) / (c - 1));
    if (std[b] === Infinity)
      std[b] = overflowSafeStd(c, (visit) => {
        for (let k = 0; k < n; k++)
          if (intAt(bucketOf, k) === b) visit(at(values, k) - at(mean, b), 1);
      });
  }
  return { count, mean, std };
}

/**
 * The unbiased std of `n` deviations d (each with weight w) when Σ w·d² overflowed although every d
 * is finite (values beyond about 1e154): s·√(Σ w·(d/s)² / (n − 1)) with s = max |d|, scaled as
 * BLAS's vector norm is, so that σ is finite whenever it is representable. Without it σ was ∞ and
 * every advantage of such a group a silent 0. Only this rare path pays the two extra passes; the
 * usual one, and its results bit for bit, are unchanged.
 */
export function overflowSafeStd(
  n: number,
  forEach: (visit: (d: number, w: number) => void) => void,
): number {
  let s = 0;
  forEach((d) => (s = Math.max(s, Math.abs(d))));
  let ss = 0;
  forEach((d, w) => (ss += w * (d / s) ** 2));
  // σ itself beyond double's range: NaN, so that estimate() refuses the advantages it would give
  // (each a silent 0 through ∞) with its message about values too large for the arithmetic.
  const std = s * Math.sqrt(ss / (n - 1));
  return std === Infinity ? NaN : std;
}

/**
 * GiGPO's group-relative step term (docs/estimators.md §2.5), also GACA's: within each step
 * group of ≥ 2 members, norm(x_m; {x of the group}); a singleton gets 0 (μ = own value,
 * σ = 1, as the GiGPO reference does). Returns the groups' statistics too.
 */
export function groupRelative(
  values: Float64Array,
  groups: StepGroups,
  normalize: Normalize,
  epsilon: number,
): { term: Float64Array; stats: GroupStats } {
  const { bucketOf } = groups;
  const stats = groupStats(values, bucketOf, groups.bucketCount);
  const term = new Float64Array(values.length);
  const withStd = normalize === 'mean-std';
  for (let k = 0; k < values.length; k++) {
    const b = intAt(bucketOf, k);
    if (intAt(stats.count, b) < 2) continue;
    const centred = at(values, k) - at(stats.mean, b);
    term[k] = withStd ? centred / (at(stats.std, b) + epsilon) : centred;
  }
  return { term, stats };
}

/**
 * Mean and unbiased std of x[lo..hi) (std NaN for fewer than 2 values; exactly
 * 0, with the mean exactly the common value, when all values are equal).
 */
export function rangeStats(x: Float64Array, lo: number, hi: number): { mean: number; std: number } {
  const n = hi - lo;
  if (n <= 0) return { mean: NaN, std: NaN };
  let sum = 0;
  let allEqual = true;
  for (let k = lo; k < hi; k++) {
    sum += at(x, k);
    if (x[k] !== x[lo]) allEqual = false;
  }
  if (allEqual) return { mean: at(x, lo), std: n < 2 ? NaN : 0 };
  const mean = sum / n;
  let ss = 0;
  for (let k = lo; k < hi; k++) ss += (at(x, k) - mean) ** 2;
  if (n < 2) return { mean, std: NaN };
  const std = Math.sqrt(ss / (n - 1));
  if (std !== Infinity) return { mean, std };
  return {
    mean,
    std: overflowSafeStd(n, (visit) => {
      for (let k = lo; k < hi; k++) visit(at(x, k) - mean, 1);
    }),
  };
}
