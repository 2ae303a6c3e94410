import { jStat } from 'jstat';

export interface PairedTTest {
  n: number;
  /** Mean of x − y over the pairs. */
  meanDifference: number;
  /** Its standard error (sample standard deviation of the differences / √n). */
  standardError: number;
  t: number;
  df: number;
  /** Two-sided p-value. */
  p: number;
  /** 95 % confidence interval of the mean difference (Student t). */
  low: number;
  high: number;
}

/**
 * Paired Student t-test of x against y (the same seeds under two methods): t = mean(d) / (sd(d)/√n)
 * with n − 1 degrees of freedom, two-sided. Differences that are all equal have no spread: p is 1
 * when they are all 0, else 0.
 */
export function pairedTTest(x: ArrayLike<number>, y: ArrayLike<number>): PairedTTest {
  if (x.length !== y.length) throw new Error('pairedTTest: x and y must pair up');
  const n = x.length;
  if (n < 2) throw new Error('pairedTTest: at least 2 pairs');
  const d = Array.from({ length: n }, (_, i) => (x[i] as number) - (y[i] as number));
  const mean = d.reduce((a, v) => a + v, 0) / n;
  const sd = Math.sqrt(d.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
  const se = sd / Math.sqrt(n);
  const df = n - 1;
  const crit = jStat.studentt.inv(0.975, df);
  if (se === 0) {
    const p = mean === 0 ? 1 : 0;
    return {
      n,
      meanDifference: mean,
      standardError: 0,
      t: mean === 0 ? 0 : Math.sign(mean) * Infinity,
      df,
      p,
      low: mean,
      high: mean,
    };
  }
  const t = mean / se;
  const p = Math.min(1, 2 * jStat.studentt.cdf(-Math.abs(t), df));
  return {
    n,
    meanDifference: mean,
    standardError: se,
    t,
    df,
    p,
    low: mean - crit * se,
    high: mean + crit * se,
  };
}

/**
 * Holm's step-down adjustment of a family of p-values (controls the family-wise error rate): sorted
 * ascending, p_(i) becomes max over j ≤ i of min(1, (m − j + 1)·p_(j)). Returned in the input order;
 * a test is significant at level α when its adjusted p is ≤ α.
 */
export function holm(pValues: number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => [p, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(m);
  let running = 0;
  order.forEach(([p, i], j) => {
    running = Math.max(running, Math.min(1, (m - j) * p));
    out[i] = running;
  });
  return out;
}
