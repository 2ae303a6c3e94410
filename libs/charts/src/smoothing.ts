/** The most smoothing the curves offer: at 0.99 a point still moves the curve by 1 %. */
export const MAX_SMOOTHING = 0.99;

/**
 * A curve smoothed by an exponential moving average with bias correction, as TensorBoard and W&B
 * smooth by default: each point is the average of the points so far, the one k points back weighted
 * by `weight`^k, so that 0 leaves the curve as it is and values near 1 show the trend of a noisy
 * metric (a success rate over 8 rollouts). Dividing by the weights' sum (1 − weight^n) keeps the
 * first points from being pulled towards 0, where a plain moving average starts. Points whose value
 * is not finite are kept as they are and do not enter the average.
 */
export function smoothedPoints(points: [number, number][], weight: number): [number, number][] {
  if (!(weight > 0)) return points;
  const w = Math.min(weight, MAX_SMOOTHING);
  let average = 0;
  let weights = 0;
  return points.map(([x, y]) => {
    if (!Number.isFinite(y)) return [x, y];
    average = average * w + (1 - w) * y;
    weights = weights * w + (1 - w);
    return [x, average / weights];
  });
}

/**
 * The smoothing a URL's text asks for, to two decimals, within [0, MAX_SMOOTHING]; 0 for text that is
 * no decimal number.
 */
export function smoothingFrom(text: string | null): number {
  // Decimal text only ("0x10" is 16 to Number), to the slider's step (1e-9 would smooth nothing
  // visibly yet draw the raw lines and the tooltip's raw values).
  if (!text || !/^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text)) return 0;
  const value = Math.round(Number(text) * 100) / 100;
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), MAX_SMOOTHING) : 0;
}
