import type { EChartsOption } from 'echarts';
import { fmt } from './line-chart';
import { methodColour } from './palette';

export interface HistogramSpec {
  method: string;
  /** Bin edges (counts.length + 1), as the server binned them. */
  edges: number[];
  counts: number[];
  title?: string;
}

/** A method's advantage histogram from server bins: one bar per bin, in the method's colour. */
export function histogramOption(spec: HistogramSpec): EChartsOption {
  const data = spec.counts.map((c, i) => {
    const lo = spec.edges[i] as number;
    const hi = spec.edges[i + 1] as number;
    return { value: [(lo + hi) / 2, c, lo, hi] };
  });
  const width =
    spec.edges.length > 1 ? (spec.edges.at(-1)! - spec.edges[0]!) / spec.counts.length : 1;
  return {
    animation: false,
    title: { text: spec.title ?? spec.method, left: 'center', textStyle: { fontSize: 13 } },
    grid: { left: 56, right: 16, top: 36, bottom: 44 },
    tooltip: {
      formatter: (p) => {
        const v = (p as { value: number[] }).value;
        return `[${fmt(v[2]!)}, ${fmt(v[3]!)}): ${v[1]} steps`;
      },
    },
    xAxis: { type: 'value', name: 'advantage', nameLocation: 'middle', nameGap: 26, scale: true },
    yAxis: { type: 'value', name: 'steps', nameLocation: 'middle', nameGap: 40 },
    series: [
      {
        type: 'custom',
        name: spec.method,
        color: methodColour(spec.method),
        data,
        encode: { x: 0, y: 1 },
        renderItem: (_params, api) => {
          const x = api.value(0) as number;
          const y = api.value(1) as number;
          const [x0, y0] = api.coord([x - width / 2, y]) as [number, number];
          const [x1, base] = api.coord([x + width / 2, 0]) as [number, number];
          return {
            type: 'rect',
            shape: { x: x0, y: y0, width: Math.max(1, x1 - x0 - 1), height: base - y0 },
            style: { fill: methodColour(spec.method) },
          };
        },
      },
    ],
  };
}

export interface DensitySpec {
  a: string;
  b: string;
  xEdges: number[];
  yEdges: number[];
  /** Row-major, y outer: counts[iy * (xEdges.length - 1) + ix]. */
  counts: number[];
  total: number;
  pearson: number | null;
  spearman: number | null;
  /** Where the bins were counted (said on the chart). */
  binnedOn?: 'server' | 'browser';
}

const corr = (r: number | null) => (r === null ? '–' : r.toFixed(3));

/**
 * Pairwise scatter as a density: every step counted in a server-side 2-D bin (so 100,000 steps cost
 * the browser a few thousand cells), shaded by log count; the subtitle says so and gives the correlations.
 */
export function densityOption(spec: DensitySpec): EChartsOption {
  const nx = spec.xEdges.length - 1;
  const centre = (e: number[], i: number) => fmt(((e[i] as number) + (e[i + 1] as number)) / 2);
  const xs = Array.from({ length: nx }, (_, i) => centre(spec.xEdges, i));
  const ys = Array.from({ length: spec.yEdges.length - 1 }, (_, i) => centre(spec.yEdges, i));
  const data: [number, number, number][] = [];
  let max = 1;
  spec.counts.forEach((c, k) => {
    if (c <= 0) return;
    data.push([k % nx, Math.floor(k / nx), c]);
    max = Math.max(max, c);
  });
  return {
    animation: false,
    title: {
      text: `${spec.a} vs ${spec.b}`,
      subtext: `density of ${spec.total.toLocaleString('en')} steps in ${nx}×${ys.length} bins (binned on the ${spec.binnedOn ?? 'server'}); Pearson r = ${corr(spec.pearson)}, Spearman ρ = ${corr(spec.spearman)}`,
      left: 'center',
      textStyle: { fontSize: 13 },
      subtextStyle: { fontSize: 11 },
    },
    grid: { left: 64, right: 72, top: 64, bottom: 48 },
    tooltip: {
      formatter: (p) => {
        const [ix, iy, c] = (p as { value: number[] }).value as [number, number, number];
        return `${spec.a} ≈ ${xs[ix]}, ${spec.b} ≈ ${ys[iy]}: ${c} steps`;
      },
    },
    xAxis: {
      type: 'category',
      data: xs,
      name: spec.a,
      nameLocation: 'middle',
      nameGap: 28,
      axisLabel: { interval: Math.ceil(xs.length / 8) - 1 },
    },
    yAxis: {
      type: 'category',
      data: ys,
      name: spec.b,
      nameLocation: 'middle',
      nameGap: 48,
      axisLabel: { interval: Math.ceil(ys.length / 8) - 1 },
    },
    visualMap: {
      type: 'continuous',
      min: 0,
      max: Math.log10(max + 1),
      calculable: false,
      right: 0,
      top: 'middle',
      dimension: 3,
      text: ['many', 'few'],
      inRange: { color: ['#9ecae1', '#3182bd', '#08306b'] },
    },
    series: [
      {
        type: 'heatmap',
        name: `${spec.a} vs ${spec.b}`,
        data: data.map(([x, y, c]) => [x, y, c, Math.log10(c + 1)]),
        progressive: 0,
      },
    ],
  };
}
