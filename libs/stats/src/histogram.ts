/** Server-side binning for charts: histograms and two-dimensional density grids. */

/** Equal-width bins from the smallest to the largest value; NaN values are left out. */
export function histogram(
  values: ArrayLike<number>,
  bins: number,
): { edges: number[]; counts: number[] } {
  const [lo, hi] = extent(values);
  const width = (hi - lo) / bins || 1;
  const counts = new Array<number>(bins).fill(0);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (Number.isNaN(v)) continue;
    counts[Math.min(bins - 1, Math.floor((v - lo) / width))]!++;
  }
  return { edges: Array.from({ length: bins + 1 }, (_, i) => lo + i * width), counts };
}

/** A grid of equal-width bins over (x, y): row-major counts, y outer. */
export function density(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  bins: number,
): { xEdges: number[]; yEdges: number[]; counts: number[]; total: number } {
  const hx = histogram(x, bins);
  const hy = histogram(y, bins);
  const [x0] = extent(x);
  const [y0] = extent(y);
  const wx = (hx.edges[bins]! - x0) / bins || 1;
  const wy = (hy.edges[bins]! - y0) / bins || 1;
  const counts = new Array<number>(bins * bins).fill(0);
  let total = 0;
  for (let i = 0; i < x.length; i++) {
    const a = x[i] as number;
    const b = y[i] as number;
    if (Number.isNaN(a) || Number.isNaN(b)) continue;
    const col = Math.min(bins - 1, Math.floor((a - x0) / wx));
    const row = Math.min(bins - 1, Math.floor((b - y0) / wy));
    counts[row * bins + col]!++;
    total++;
  }
  return { xEdges: hx.edges, yEdges: hy.edges, counts, total };
}

function extent(values: ArrayLike<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : [0, 0];
}
