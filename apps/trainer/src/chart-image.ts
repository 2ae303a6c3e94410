import { Resvg } from '@resvg/resvg-js';
import * as echarts from 'echarts';
import type { EChartsOption } from 'echarts';

/**
 * A chart of libs/charts drawn without a browser: ECharts' server-side renderer makes the SVG (no
 * DOM), resvg turns it into a PNG. The same specs and colours as the web app's charts.
 */
export function chartSvg(option: EChartsOption, width: number, height: number): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ backgroundColor: '#ffffff', ...option, animation: false });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

/** Fonts: the system's; generic families map to faces Debian has (DejaVu, else Liberation). */
export function svgToPng(svg: string): Buffer {
  const resvg = new Resvg(svg, {
    font: {
      loadSystemFonts: true,
      sansSerifFamily: 'DejaVu Sans',
      defaultFontFamily: 'DejaVu Sans',
    },
  });
  return Buffer.from(resvg.render().asPng());
}

/** Both forms of a chart: SVG for the docs, PNG for everything that shows images. */
export function chartImages(
  option: EChartsOption,
  width = 800,
  height = 460,
): { svg: string; png: Buffer } {
  const svg = chartSvg(option, width, height);
  return { svg, png: svgToPng(svg) };
}
