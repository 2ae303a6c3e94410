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

/** The smoothing a URL's text asks for, within [0, MAX_SMOOTHING]; 0 for text that is no number. */
export function smoothingFrom(text: string | null): number {
  const value = Number(text ?? 0);
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), MAX_SMOOTHING) : 0;
}
