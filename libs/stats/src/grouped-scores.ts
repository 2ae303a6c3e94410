import { ranks } from './descriptive';
import { perGroupCorrelation, type CorrelationKind } from './groups';

/**
 * A score that is a function of statistics summed over groups: `stats` holds `width` numbers per
 * group (row-major), and `score` maps their sum over any multiset of groups to the score. The
 * bootstrap resamples groups by summing their rows with multiplicities, which costs groups × width
 * per resample, whatever the number of steps.
 */
export interface GroupedScore {
  width: number;
  stats: Float64Array;
  /** The score of summed statistics; NaN where undefined (e.g. no variance). */
  score(sum: Float64Array): number;
}

function perGroup(
  offsets: Int32Array,
  width: number,
  row: (from: number, to: number, out: Float64Array) => void,
) {
  const groups = offsets.length - 1;
  const stats = new Float64Array(Math.max(0, groups) * width);
  for (let g = 0; g < groups; g++)
    row(offsets[g] as number, offsets[g + 1] as number, stats.subarray(g * width, (g + 1) * width));
  return stats;
}

/** The score over all groups (each once). */
export function scoreOf(s: GroupedScore): number {
  const sum = new Float64Array(s.width);
  for (let i = 0; i < s.stats.length; i++) add(sum, i % s.width, s.stats[i] as number);
  return s.score(sum);
}

/** Pooled Pearson correlation of a and b over all steps. */
export function pooledPearsonScore(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
): GroupedScore {
  const stats = perGroup(offsets, 6, (from, to, out) => {
    for (let k = from; k < to; k++) {
      const x = a[k] as number;
      const y = b[k] as number;
      add(out, 0, 1);
      add(out, 1, x);
      add(out, 2, y);
      add(out, 3, x * x);
      add(out, 4, y * y);
      add(out, 5, x * y);
    }
  });
  return {
    width: 6,
    stats,
    score: ([n, sx, sy, sxx, syy, sxy]) => {
      const N = n as number;
      const cxy = (sxy as number) - ((sx as number) * (sy as number)) / N;
      const cxx = (sxx as number) - ((sx as number) * (sx as number)) / N;
      const cyy = (syy as number) - ((sy as number) * (sy as number)) / N;
      return cxx <= 0 || cyy <= 0 ? NaN : cxy / Math.sqrt(cxx * cyy);
    },
  };
}

/**
 * Pooled Spearman correlation. Ranks are taken once over all steps and held fixed when groups are
 * resampled (re-ranking each resample changes little and costs a sort per resample).
 */
export function pooledSpearmanScore(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
): GroupedScore {
  return pooledPearsonScore(ranks(a), ranks(b), offsets);
}

/** Sign agreement over steps where both are nonzero (see `signAgreement`). */
export function signAgreementScore(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
): GroupedScore {
  const stats = perGroup(offsets, 2, (from, to, out) => {
    for (let k = from; k < to; k++) {
      const x = a[k] as number;
      const y = b[k] as number;
      if (x !== 0 && y !== 0) {
        add(out, 0, 1);
        if (x > 0 === y > 0) add(out, 1, 1);
      }
    }
  });
  return {
    width: 2,
    stats,
    score: ([both, same]) => (both ? (same as number) / (both as number) : NaN),
  };
}

/** The mean over groups of the within-group correlation (groups where it is undefined left out). */
export function meanGroupCorrelationScore(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  offsets: Int32Array,
  kind: CorrelationKind = 'pearson',
): GroupedScore {
  const rs = perGroupCorrelation(a, b, offsets, kind);
  const stats = new Float64Array(rs.length * 2);
  rs.forEach((r, g) => {
    if (r === null) return;
    stats[2 * g] = 1;
    stats[2 * g + 1] = r;
  });
  return { width: 2, stats, score: ([n, s]) => (n ? (s as number) / (n as number) : NaN) };
}

/** The mean of a per-step value (e.g. a squared error) over all steps. */
export function meanScore(x: ArrayLike<number>, offsets: Int32Array): GroupedScore {
  const stats = perGroup(offsets, 2, (from, to, out) => {
    for (let k = from; k < to; k++) {
      add(out, 0, 1);
      add(out, 1, x[k] as number);
    }
  });
  return { width: 2, stats, score: ([n, s]) => (n ? (s as number) / (n as number) : NaN) };
}

/** x[i] += v on a typed array (under noUncheckedIndexedAccess). */
function add(x: Float64Array, i: number, v: number): void {
  x[i] = (x[i] as number) + v;
}
