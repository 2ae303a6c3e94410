import { seededRandom } from '@creditlab/random';

/**
 * GACA's error-optimal mixing weight: per NLL quintile, the least-squares fit α·A^S + β·A^E ≈ A of
 * the truth A by GACA's step and episode terms, and λ* = α/(α+β), the weight GACA's λ should follow.
 * λ* is a ratio: where the best fit gives the two terms opposite weights of about the same size
 * (α + β near 0, the truth tracking A^S − A^E rather than any mix of them), it is not determined, and its
 * point estimate can be anything (−1600 was seen). Intervals come from resampling tasks; a quintile
 * whose interval of α + β holds 0 is reported as undetermined.
 */
export interface MixColumns {
  nll: ArrayLike<number>;
  step: ArrayLike<number>;
  episode: ArrayLike<number>;
  truth: ArrayLike<number>;
  /** Rows of task g: offsets[g] .. offsets[g + 1] − 1 (tasks are the bootstrap's clusters). */
  offsets: Int32Array;
}

export interface QuintileMix {
  /** λ* on all rows (NaN when the fit is degenerate). */
  lambda: number;
  /** 95 % percentile intervals over the resamples (finite values only). */
  lambdaInterval: [number, number];
  sumInterval: [number, number];
  /** False where the interval of α + β holds 0: λ* is then not determined by the data. */
  determined: boolean;
}

/** The least-squares α, β of α·s + β·e ≈ t over rows [s, e, t]; null when s and e are collinear. */
export function leastSquaresMix(
  rows: Iterable<[number, number, number]>,
): { alpha: number; beta: number } | null {
  let ss = 0,
    se = 0,
    ee = 0,
    st = 0,
    et = 0;
  for (const [s, e, t] of rows) {
    ss += s * s;
    se += s * e;
    ee += e * e;
    st += s * t;
    et += e * t;
  }
  const det = ss * ee - se * se;
  if (det === 0) return null;
  return { alpha: (st * ee - et * se) / det, beta: (et * ss - st * se) / det };
}

/** The rows split into five NLL quintiles: sorted by NLL (ties in row order), cut into fifths. */
export function nllQuintiles(rows: number[], nll: ArrayLike<number>): number[][] {
  const order = rows
    .map((i, at) => [nll[i]!, at, i] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([, , i]) => i);
  return [0, 1, 2, 3, 4].map((b) =>
    order.slice(Math.floor((b * order.length) / 5), Math.floor(((b + 1) * order.length) / 5)),
  );
}

/** α + β and λ* of each NLL quintile of `rows`. */
function quintileFits(c: MixColumns, rows: number[]): { sum: number; lambda: number }[] {
  return nllQuintiles(rows, c.nll).map((idx) => {
    const fit = leastSquaresMix(
      idx.map((i): [number, number, number] => [c.step[i]!, c.episode[i]!, c.truth[i]!]),
    );
    if (fit === null) return { sum: NaN, lambda: NaN };
    const sum = fit.alpha + fit.beta;
    return { sum, lambda: sum === 0 ? NaN : fit.alpha / sum };
  });
}

/** λ* per NLL quintile with intervals over `resamples` resamples of the tasks (seeded). */
export function optimalMixByQuintile(
  c: MixColumns,
  options: { resamples: number; seed: number },
): QuintileMix[] {
  const tasks = c.offsets.length - 1;
  const rowsOf = (task: number) =>
    Array.from({ length: c.offsets[task + 1]! - c.offsets[task]! }, (_, k) => c.offsets[task]! + k);
  const all = Array.from({ length: tasks }, (_, g) => rowsOf(g)).flat();
  const rand = seededRandom(options.seed);
  const resampled = Array.from({ length: options.resamples }, () =>
    quintileFits(c, Array.from({ length: tasks }, () => rowsOf(Math.floor(rand() * tasks))).flat()),
  );
  return quintileFits(c, all).map((point, q) => {
    const sumInterval = percentileInterval(resampled.map((r) => r[q]!.sum));
    return {
      lambda: point.lambda,
      lambdaInterval: percentileInterval(resampled.map((r) => r[q]!.lambda)),
      sumInterval,
      determined: sumInterval[0] > 0 || sumInterval[1] < 0,
    };
  });
}

function percentileInterval(xs: number[]): [number, number] {
  const sorted = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!sorted.length) return [NaN, NaN];
  const at = (f: number) => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))]!;
  return [at(0.025), at(0.975)];
}
