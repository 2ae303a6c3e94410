import type { EChartsOption } from 'echarts';
import { methodColour } from './palette';
import { smoothedPoints } from './smoothing';

export interface CurveSeries {
  /** Legend entry, e.g. the method or the run name. */
  name: string;
  /** Colours the line: one colour per method everywhere. */
  method: string;
  /** [x, y] points in x order. */
  points: [number, number][];
  /** Drawn dashed: a second run of the same method (a fork, a retrain, a picked run). */
  dashed?: boolean;
  /**
   * Which of the same method's lines this is (0: solid; 1, 2, …: dashed, dotted, dash-dot, …, each with
   * its own point marker), so that several runs of one method, all in its colour, can be told apart.
   * Overrides `dashed`.
   */
  variant?: number;
}

/** Line patterns and point markers by variant: solid first. */
const PATTERNS: ('solid' | 'dashed' | 'dotted' | number[])[] = [
  'solid',
  'dashed',
  'dotted',
  [10, 3, 2, 3],
  [14, 5],
  [2, 6],
];
// The first is ECharts' own default: a run alone, or a document's charts, draw as they did.
const MARKERS = ['emptyCircle', 'rect', 'triangle', 'diamond', 'pin', 'arrow'];

export interface LineChartSpec {
  title?: string;
  xName: string;
  yName: string;
  series: CurveSeries[];
  /** y is a fraction in [0, 1], shown in %. */
  percent?: boolean;
  /** Static output (PNG/SVG): no animation, no tooltip, every legend entry shown (no scrolling). */
  static?: boolean;
  /** x is a fraction in [0, 1], shown in % from 0 to 100. */
  xPercent?: boolean;
  /**
   * Draw each series smoothed by this weight (`smoothedPoints`, 0 to 0.99), over its raw points in a
   * faint line of the same colour; the tooltip gives both. 0 or absent: the points as they are.
   */
  smoothing?: number;
}

const pct = (v: number) => `${Math.round(v * 100)} %`;

/** Learning curves and any per-iteration series: a legend naming each series, labelled axes. */
export function lineChartOption(spec: LineChartSpec): EChartsOption {
  const smoothing = spec.static ? 0 : (spec.smoothing ?? 0);
  const value = (v: number) => (spec.percent ? pct(v) : fmt(v));
  return {
    animation: !spec.static,
    title: spec.title
      ? { text: spec.title, left: 'center', textStyle: { fontSize: 14 } }
      : undefined,
    // a static image cannot scroll its legend: the entries wrap onto more lines instead
    legend: {
      type: spec.static ? 'plain' : 'scroll',
      bottom: 0,
      // the image's fonts run a little wider than ECharts measures them
      ...(spec.static ? { itemGap: 24 } : {}),
      data: spec.series.map((s) => s.name),
    },
    grid: {
      left: 64,
      right: 24,
      top: spec.title ? 40 : 16,
      bottom: spec.static ? 50 + 30 * Math.ceil(spec.series.length / 6) : 64,
    },
    tooltip: spec.static
      ? undefined
      : {
          trigger: 'axis',
          // inside the chart: near a narrow chart's edge it was cut off by the page
          confine: true,
          valueFormatter: (v) => value(Number(v)),
          ...(smoothing > 0
            ? {
                formatter: (params) =>
                  smoothedTooltip(spec, params as unknown as TooltipItem[], value),
              }
            : {}),
        },
    xAxis: {
      type: 'value',
      name: spec.xName,
      nameLocation: 'middle',
      nameGap: 26,
      ...(spec.xPercent
        ? { min: 0, max: 1, axisLabel: { formatter: pct } }
        : { minInterval: 1, min: 'dataMin' }),
      // The tooltip's heading: "iteration 4", where ECharts wrote the bare axis value ("4.00").
      axisPointer: { label: { formatter: ({ value }) => xLabel(spec, Number(value)) } },
    },
    yAxis: {
      type: 'value',
      name: spec.yName,
      nameLocation: 'middle',
      nameGap: 48,
      scale: !spec.percent,
      ...(spec.percent ? { min: 0, max: 1, axisLabel: { formatter: pct } } : {}),
    },
    series: [
      ...spec.series.map((s) =>
        lineSeries(s, smoothing > 0 ? smoothedPoints(s.points, smoothing) : s.points),
      ),
      // The raw points under the smoothed line; the same name, so the legend shows and hides both.
      ...(smoothing > 0 ? spec.series.map(rawSeries) : []),
    ],
  };
}

function lineSeries(s: CurveSeries, points: [number, number][]) {
  const variant = (s.variant ?? (s.dashed ? 1 : 0)) % PATTERNS.length;
  return {
    type: 'line' as const,
    name: s.name,
    data: points,
    showSymbol: points.length < 60,
    // (`dashed` alone keeps the default marker: the documents' charts draw as before)
    symbol: MARKERS[s.variant === undefined ? 0 : variant],
    symbolSize: 5,
    color: methodColour(s.method),
    lineStyle: { width: 2, type: PATTERNS[variant] },
    // Long curves are thinned for drawing only (largest-triangle), never for the tooltip's values.
    sampling: 'lttb' as const,
  };
}

function rawSeries(s: CurveSeries) {
  return {
    type: 'line' as const,
    name: s.name,
    data: s.points,
    symbol: 'none',
    color: methodColour(s.method),
    lineStyle: { width: 1, opacity: 0.3 },
    silent: true,
    z: 1,
    sampling: 'lttb' as const,
  };
}

/** What ECharts gives an axis tooltip's formatter of each series at the pointer. */
interface TooltipItem {
  seriesIndex: number;
  seriesName: string;
  marker: string;
  axisValue: number | string;
  value: [number, number];
}

/**
 * The tooltip of smoothed curves: for each run its smoothed value and, in brackets, the raw one at
 * that iteration (the raw series come after the smoothed ones, in the same order).
 */
function smoothedTooltip(
  spec: LineChartSpec,
  items: TooltipItem[],
  value: (v: number) => string,
): string {
  const n = spec.series.length;
  const raw = new Map(items.filter((i) => i.seriesIndex >= n).map((i) => [i.seriesIndex - n, i]));
  const lines = items
    .filter((i) => i.seriesIndex < n)
    .map((i) => {
      const r = raw.get(i.seriesIndex);
      const rawText = r ? ` <span style="opacity:0.7">(raw ${value(r.value[1])})</span>` : '';
      return `${i.marker}${escapeHtml(i.seriesName)} <b>${value(i.value[1])}</b>${rawText}`;
    });
  const x = items[0] ? xLabel(spec, Number(items[0].axisValue)) : '';
  return [escapeHtml(x), ...lines].join('<br/>');
}

/** Run names are the users' text: the tooltip is HTML. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** An x value named by its axis: `iteration 4`, or a percentage on a fraction axis. */
export function xLabel(spec: Pick<LineChartSpec, 'xName' | 'xPercent'>, x: number): string {
  return spec.xPercent ? pct(x) : `${spec.xName} ${fmt(x)}`;
}

/** 3 significant digits, without exponent noise for ordinary values. */
export function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return Number(v.toPrecision(3)).toString();
}
