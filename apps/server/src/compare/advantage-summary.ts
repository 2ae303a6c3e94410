import { mean, quantile, std } from '@creditlab/stats';
import type { AdvantageSummary } from './compare.models';

/**
 * The summary of `x`, given its values in ascending order (as float32, −0 as +0): the comparison
 * sorts each series once, to rank it, and its quantiles come from that same order.
 */
export function summarize(x: Float32Array, sorted: Float32Array): AdvantageSummary {
  let positive = 0;
  let zero = 0;
  for (const v of x) {
    if (v > 0) positive++;
    else if (v === 0) zero++;
  }
  const n = x.length || 1;
  return {
    mean: mean(x),
    std: std(x),
    min: sorted[0] ?? NaN,
    max: sorted[sorted.length - 1] ?? NaN,
    p05: quantile(sorted, 0.05),
    p25: quantile(sorted, 0.25),
    p50: quantile(sorted, 0.5),
    p75: quantile(sorted, 0.75),
    p95: quantile(sorted, 0.95),
    fractionPositive: positive / n,
    fractionZero: zero / n,
  };
}
