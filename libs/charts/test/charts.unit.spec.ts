import { METHOD_NAMES } from '@creditlab/estimators';
import {
  densityOption,
  histogramOption,
  lineChartOption,
  MAX_SMOOTHING,
  methodColour,
  signedColour,
  smoothedPoints,
  smoothingFrom,
} from '@creditlab/charts';

test('every registered method has a colour of its own', () => {
  const colours = METHOD_NAMES.map(methodColour);
  expect(new Set(colours).size).toBe(METHOD_NAMES.length);
  expect(methodColour('a-future-method')).toBe(methodColour('a-future-method'));
});

test('advantage cells: blue for credit, red for blame, white at zero, saturated at the scale', () => {
  expect(signedColour(0, 1)).toBe('rgb(255, 255, 255)');
  expect(signedColour(2, 2)).toBe('rgb(33, 102, 172)');
  expect(signedColour(-5, 2)).toBe('rgb(178, 24, 43)');
});

test('learning curves: a named series per run in its method colour, the others dashed, labelled axes', () => {
  const option = lineChartOption({
    xName: 'iteration',
    yName: 'success',
    percent: true,
    series: [
      { name: 'run a', method: 'gigpo', points: [[0, 0.1]] },
      { name: 'fork b', method: 'grpo', points: [[0, 0.2]], dashed: true },
    ],
  });
  const series = option.series as { name: string; color: string; lineStyle: { type: string } }[];
  expect(series.map((s) => [s.name, s.color, s.lineStyle.type])).toEqual([
    ['run a', methodColour('gigpo'), 'solid'],
    ['fork b', methodColour('grpo'), 'dashed'],
  ]);
  expect((option.legend as { data: string[] }).data).toEqual(['run a', 'fork b']);
  expect(option.xAxis).toMatchObject({ name: 'iteration' });
  expect(option.yAxis).toMatchObject({ name: 'success', min: 0, max: 1 });
  // The tooltip's heading names the iteration (it was the bare axis value, "4.00").
  const heading = (
    option.xAxis as { axisPointer: { label: { formatter(p: { value: number }): string } } }
  ).axisPointer.label.formatter;
  expect(heading({ value: 4 })).toBe('iteration 4');
});

test('a histogram draws one bar per server bin, centred between its edges', () => {
  const option = histogramOption({ method: 'gaca', edges: [-1, 0, 1, 2], counts: [3, 0, 5] });
  const [series] = option.series as { data: { value: number[] }[] }[];
  expect(series!.data.map((d) => d.value)).toEqual([
    [-0.5, 3, -1, 0],
    [0.5, 0, 0, 1],
    [1.5, 5, 1, 2],
  ]);
});

test('density: row-major counts (y outer) become cells at (x bin, y bin); empty bins are not drawn', () => {
  const option = densityOption({
    a: 'gigpo',
    b: 'grpo',
    xEdges: [0, 1, 2, 3],
    yEdges: [0, 1, 2],
    // y = 0: x bins 0..2; y = 1: x bins 0..2
    counts: [4, 0, 0, 0, 0, 9],
    total: 13,
    pearson: 0.5,
    spearman: null,
  });
  const [series] = option.series as { data: number[][] }[];
  expect(series!.data.map(([x, y, c]) => [x, y, c])).toEqual([
    [0, 0, 4],
    [2, 1, 9],
  ]);
  const title = option.title as { subtext: string };
  expect(title.subtext).toContain('13 steps in 3×2 bins (binned on the server)');
  expect(title.subtext).toContain('Pearson r = 0.500, Spearman ρ = –');
});

test('several runs of one method, all in its colour, each get a line pattern and marker of their own', () => {
  const option = lineChartOption({
    xName: 'iteration',
    yName: 'loss',
    series: [0, 1, 2].map((variant) => ({
      name: `run ${variant}`,
      method: 'gigpo',
      points: [[0, 1]] as [number, number][],
      variant,
    })),
  });
  const series = option.series as { color: string; symbol: string; lineStyle: { type: unknown } }[];
  expect(new Set(series.map((s) => s.color)).size).toBe(1);
  expect(series.map((s) => s.lineStyle.type)).toEqual(['solid', 'dashed', 'dotted']);
  expect(new Set(series.map((s) => s.symbol)).size).toBe(3);
});

describe('smoothing', () => {
  test('an average with bias correction: the first point as it is, each next one pulled by the weight', () => {
    const points: [number, number][] = [
      [0, 1],
      [1, 0],
      [2, 1],
      [5, NaN],
      [6, 1],
    ];
    const w = 0.5;
    // by hand: sums of weighted values over sums of weights
    const expected = [1, (0.5 * 1 + 0) / (0.5 + 1), (0.25 + 0 + 1) / (0.25 + 0.5 + 1)];
    const fourth = (0.125 + 0 + 0.5 + 1) / (0.125 + 0.25 + 0.5 + 1);
    const smooth = smoothedPoints(points, w);
    expect(smooth.map(([x]) => x)).toEqual([0, 1, 2, 5, 6]);
    smooth.slice(0, 3).forEach(([, y], i) => expect(y).toBeCloseTo(expected[i]!, 12));
    expect(smooth[3]![1]).toBeNaN(); // kept, and left out of the average
    expect(smooth[4]![1]).toBeCloseTo(fourth, 12);
    expect(smoothedPoints(points, 0)).toBe(points);
  });

  test('a constant curve stays where it is, and a noisy one comes near its mean', () => {
    const flat = smoothedPoints(
      Array.from({ length: 50 }, (_, i): [number, number] => [i, 0.7]),
      0.9,
    );
    for (const [, y] of flat) expect(y).toBeCloseTo(0.7, 12);
    const noisy = smoothedPoints(
      Array.from({ length: 400 }, (_, i): [number, number] => [i, i % 2]),
      0.95,
    );
    expect(Math.abs(noisy.at(-1)![1] - 0.5)).toBeLessThan(0.05);
  });

  test('the URL text: a number within 0 to 0.99, else none', () => {
    expect(
      ['0.6', '2', '-1', 'abc', null, '', '0x10', '1e-9', '0.456', 'Infinity'].map(smoothingFrom),
    ).toEqual([0.6, MAX_SMOOTHING, 0, 0, 0, 0, 0, 0, 0.46, 0]);
  });

  test('the chart draws each series smoothed, its raw points faint under it, and the tooltip gives both', () => {
    const series = [
      {
        name: 'run <a>',
        method: 'gigpo',
        points: [
          [0, 0],
          [1, 1],
        ] as [number, number][],
      },
      {
        name: 'fork b',
        method: 'grpo',
        points: [
          [0, 1],
          [1, 1],
        ] as [number, number][],
        variant: 1,
      },
    ];
    const option = lineChartOption({
      xName: 'iteration',
      yName: 'success',
      percent: true,
      series,
      smoothing: 0.5,
    });
    const drawn = option.series as {
      name: string;
      data: [number, number][];
      color: string;
      lineStyle: { opacity?: number };
    }[];
    expect(drawn.map((s) => [s.name, s.color])).toEqual([
      ['run <a>', methodColour('gigpo')],
      ['fork b', methodColour('grpo')],
      ['run <a>', methodColour('gigpo')],
      ['fork b', methodColour('grpo')],
    ]);
    expect(drawn[0]!.data).toEqual(smoothedPoints(series[0]!.points, 0.5));
    expect(drawn[2]!.data).toEqual(series[0]!.points);
    expect(drawn[2]!.lineStyle.opacity).toBeLessThan(1);
    expect((option.legend as { data: string[] }).data).toEqual(['run <a>', 'fork b']);
    const format = (option.tooltip as { formatter(items: unknown[]): string }).formatter;
    const at1 = (seriesIndex: number) => ({
      seriesIndex,
      seriesName: drawn[seriesIndex]!.name,
      marker: '•',
      axisValue: 1,
      value: drawn[seriesIndex]!.data[1],
    });
    expect(format([0, 1, 2, 3].map(at1))).toBe(
      'iteration 1<br/>•run &#60;a&#62; <b>67 %</b> <span style="opacity:0.7">(raw 100 %)</span><br/>•fork b <b>100 %</b> <span style="opacity:0.7">(raw 100 %)</span>',
    );
    // Without smoothing: the series alone, and ECharts' own tooltip.
    const plain = lineChartOption({ xName: 'iteration', yName: 'success', series, smoothing: 0 });
    expect((plain.series as unknown[]).length).toBe(2);
    expect((plain.tooltip as { formatter?: unknown }).formatter).toBeUndefined();
  });
});
