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

/** A 3×5 pixel font for the axis labels: digits and the percent sign, rows top to bottom, 3 bits each. */
const GLYPHS: Record<string, number[]> = {
  '0': [7, 5, 5, 5, 7],
  '1': [2, 6, 2, 2, 7],
  '2': [7, 1, 7, 4, 7],
  '3': [7, 1, 7, 1, 7],
  '4': [5, 5, 7, 1, 1],
  '5': [7, 4, 7, 1, 7],
  '6': [7, 4, 7, 5, 7],
  '7': [7, 1, 1, 2, 2],
  '8': [7, 5, 7, 5, 7],
  '9': [7, 5, 7, 1, 7],
  '%': [5, 1, 2, 4, 5],
};

/**
 * A small line chart as PNG bytes: y from 0 to 1 with grid lines and labels at 0.2 steps (in %), x from 0
 * to `xMax` with labels every `xMax / 6` or so, a colour per series and a legend of colour swatches in
 * series order (method names go in the caption: a font for letters is more than this needs). Enough for
 * learning curves, with no plotting dependency.
 */
export function lineChartPng(series: Series[], xMax: number, width = 720, height = 420): Buffer {
  const png = new PNG({ width, height });
  png.data.fill(255);
  const left = 52;
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
  /** Text of digits and %, `scale` pixels per font pixel, right-aligned at x when `alignRight`. */
  const text = (str: string, x: number, y: number, alignRight = false, scale = 2) => {
    const w = str.length * 4 * scale - scale;
    let cx = alignRight ? x - w : x;
    for (const ch of str) {
      (GLYPHS[ch] ?? []).forEach((bits, row) => {
        for (let col = 0; col < 3; col++)
          if (bits & (4 >> col))
            for (let dx = 0; dx < scale; dx++)
              for (let dy = 0; dy < scale; dy++)
                set(cx + col * scale + dx, y + row * scale + dy, [90, 90, 90]);
      });
      cx += 4 * scale;
    }
  };
  for (let g = 0; g <= 5; g++) {
    line(left, py(g / 5), right, py(g / 5), [225, 225, 225]);
    text(`${g * 20}%`, left - 4, py(g / 5) - 5, true);
  }
  const step = Math.max(1, Math.round(xMax / 6));
  for (let x = 0; x <= xMax; x += step) {
    line(px(x), bottom, px(x), bottom + 4, [0, 0, 0]);
    text(String(x), px(x) - String(x).length * 4 + 1, bottom + 8);
  }
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
      for (let dy = 0; dy < 8; dy++) set(left + 10 + k * 24 + dx, height - 14 + dy, c);
  });
  return PNG.sync.write(png);
}
