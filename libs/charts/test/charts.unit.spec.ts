import { METHOD_NAMES } from '@creditlab/estimators';
import {
  densityOption,
  histogramOption,
  lineChartOption,
  methodColour,
  signedColour,
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
