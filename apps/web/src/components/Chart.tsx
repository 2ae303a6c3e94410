import { useEffect, useRef } from 'react';
import * as echarts from 'echarts/core';
import { BarChart, CustomChart, HeatmapChart, LineChart, ScatterChart } from 'echarts/charts';
import {
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import type { EChartsOption } from 'echarts';

// Only what the app draws: keeps the charting code at about a third of the full library.
echarts.use([
  LineChart,
  BarChart,
  CustomChart,
  HeatmapChart,
  ScatterChart,
  GridComponent,
  LegendComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
  DataZoomComponent,
  CanvasRenderer,
]);

interface Props {
  option: EChartsOption;
  height?: number;
  /** For tests and screen readers: what the chart shows. */
  label: string;
  testId?: string;
  seriesCount?: number;
}

/** An ECharts canvas that follows its option and its container's width. */
export function Chart({ option, height = 280, label, testId, seriesCount }: Props) {
  const ref = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  useEffect(() => {
    const el = ref.current!;
    const c = echarts.init(el, undefined, { renderer: 'canvas' });
    chart.current = c;
    const resize = new ResizeObserver(() => c.resize());
    resize.observe(el);
    return () => {
      resize.disconnect();
      // A series zrender paints incrementally (ECharts 6 paints every heatmap so) is painted in slices
      // of 15 ms, the next slice queued for the next animation frame, and dispose does not cancel that
      // frame: it then paints a disposed chart and throws ("reading 'layerStack'"), seen when a page
      // is left while a slow machine is still painting. Clearing first starts a new (empty) paint,
      // which makes the queued slice stale, so it returns without painting.
      c.clear();
      c.dispose();
      chart.current = null;
    };
  }, []);
  useEffect(() => {
    chart.current?.setOption(option, { notMerge: true });
    ref.current?.setAttribute('data-rendered', 'true');
  }, [option]);
  return (
    <div
      className="chart"
      ref={ref}
      role="img"
      aria-label={label}
      data-testid={testId}
      data-series={seriesCount}
      style={{ height }}
    />
  );
}
