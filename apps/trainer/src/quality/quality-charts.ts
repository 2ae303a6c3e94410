import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { lineChartOption, type CurveSeries } from '@creditlab/charts';
import { chartImages } from '../chart-image';
import { QUALITY_ROWS } from './methods';

/**
 * The rows the quality charts draw: every row but the truth (a flat line at 1), the two references
 * dashed. Each line has its own colour and legend entry: the plain return is REINFORCE's estimate
 * and takes its colour; the oracle reference is no method and takes a spare one.
 */
export function qualityChartSeries(points: (row: string) => [number, number][]): CurveSeries[] {
  return QUALITY_ROWS.filter((r) => r.name !== 'truth').map((r) => ({
    name: r.name,
    method: r.kind === 'baseline-free' ? 'reinforce' : r.kind === 'oracle' ? 'oracle' : r.name,
    dashed: r.kind !== 'method',
    points: points(r.name),
  }));
}

/** One line per chart row, as PNG and SVG (libs/charts: legend and labelled axes). */
export function writeChart(
  outDir: string,
  png: string,
  xName: string,
  points: (row: string) => [number, number][],
  xPercent = false,
): void {
  const chart = chartImages(
    lineChartOption({
      xName,
      xPercent,
      yName: 'within-group Pearson with the truth',
      static: true,
      series: qualityChartSeries(points),
    }),
  );
  writeFileSync(path.join(outDir, png), chart.png);
  writeFileSync(path.join(outDir, png.replace(/\.png$/, '.svg')), chart.svg);
}
