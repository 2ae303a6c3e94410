import { PNG } from 'pngjs';

export interface Series {
  label: string;
  /** [x, y] points, y in [0, 1]. */
  points: [number, number][];
}

const PALETTE: [number, number, number][] = [
  [31, 119, 180],
  [255, 127, 14],
  [44, 160, 44],
  [214, 39, 40],
  [148, 103, 189],
  [140, 86, 75],
  [227, 119, 194],
  [127, 127, 127],
];

/**
 * A small line chart as PNG bytes: y from 0 to 1 with grid lines at 0.2 steps, x from 0 to `xMax`, a
 * colour per series and a legend of colour swatches in series order (the labels go in the caption, since
 * drawing text needs a font). Enough for learning curves, with no plotting dependency.
 */
export function lineChartPng(series: Series[], xMax: number, width = 720, height = 420): Buffer {
  const png = new PNG({ width, height });
  png.data.fill(255);
  const left = 40;
  const right = width - 20;
  const top = 20;
  const bottom = height - 40;
  const px = (x: number) => Math.round(left + (x / Math.max(1, xMax)) * (right - left));
  const py = (y: number) => Math.round(bottom - y * (bottom - top));
  const set = (x: number, y: number, [r, g, b]: [number, number, number]) => {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    const i = (y * width + x) * 4;
    png.data[i] = r;
    png.data[i + 1] = g;
    png.data[i + 2] = b;
    png.data[i + 3] = 255;
  };
  const line = (
    x0: number,
    y0: number,
    x1: number,
    y1: number,
    c: [number, number, number],
    thick = 1,
  ) => {
    const steps = Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0), 1);
    for (let s = 0; s <= steps; s++) {
      const x = Math.round(x0 + ((x1 - x0) * s) / steps);
      const y = Math.round(y0 + ((y1 - y0) * s) / steps);
      for (let dx = -thick + 1; dx < thick; dx++)
        for (let dy = -thick + 1; dy < thick; dy++) set(x + dx, y + dy, c);
    }
  };
  for (let g = 0; g <= 5; g++) line(left, py(g / 5), right, py(g / 5), [225, 225, 225]);
  line(left, top, left, bottom, [0, 0, 0]);
  line(left, bottom, right, bottom, [0, 0, 0]);
  series.forEach((s, k) => {
    const c = PALETTE[k % PALETTE.length] as [number, number, number];
    for (let i = 1; i < s.points.length; i++) {
      const [x0, y0] = s.points[i - 1] as [number, number];
      const [x1, y1] = s.points[i] as [number, number];
      line(px(x0), py(y0), px(x1), py(y1), c, 2);
    }
    for (let dx = 0; dx < 14; dx++)
      for (let dy = 0; dy < 8; dy++) set(left + 10 + k * 24 + dx, height - 20 + dy, c);
  });
  return PNG.sync.write(png);
}
