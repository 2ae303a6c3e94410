import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { lineChartOption, type CurveSeries } from '@creditlab/charts';
import { machineLine, writeSection } from '@creditlab/report';
import { holm, pairedTTest } from '@creditlab/stats';
import { DEFAULT_CONFIG } from './config';
import type { ExperimentPlan } from './experiment-command';
import { truthSection, valueLossTable } from './experiment-sections';
import type { ExperimentData, RunRecord } from './experiment-data';
import { chartImages } from './chart-image';

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
const pct = (x: number) => `${(100 * x).toFixed(1)}`;

/**
 * The primary measure: the area under the held-out success curve, normalised by the span of the
 * evaluations (the trapezoid rule from the first evaluation to the last): the mean success over
 * training, so faster learning counts, not only where a run ends. One evaluation: its value.
 */
export function areaUnderCurve(curve: [number, number][]): number {
  if (curve.length === 0) return NaN;
  if (curve.length === 1) return curve[0]![1];
  let area = 0;
  for (let i = 1; i < curve.length; i++) {
    const [x0, y0] = curve[i - 1]!;
    const [x1, y1] = curve[i]!;
    area += ((y0 + y1) / 2) * (x1 - x0);
  }
  return area / (curve.at(-1)![0] - curve[0]![0]);
}

const STEP_LEVEL = ['gigpo', 'gaca', 'gated-bepo', 'gagpo', 'bipace'];

/** The step-level method with the largest mean held-out area in the main arm (the control arm's third). */
export function bestStepLevel(data: ExperimentData, methods: string[]): string {
  const candidates = methods.filter((m) => STEP_LEVEL.includes(m));
  const score = (m: string) => mean(runsOf(data, m, false).map((r) => areaUnderCurve(r.curve)));
  return candidates.sort((a, b) => score(b) - score(a))[0] ?? 'gigpo';
}

function runsOf(data: ExperimentData, method: string, whiten: boolean): RunRecord[] {
  return data.runs
    .filter((r) => r.method === method && r.whiten === whiten)
    .sort((a, b) => a.seed - b.seed);
}

/** Paired tests of each `a` against its `b` on the seeds both have, Holm-adjusted as one family. */
function pairedFamily(
  data: ExperimentData,
  pairs: { a: [string, boolean]; b: [string, boolean] }[],
) {
  const tests = pairs.map(({ a, b }) => {
    const ra = runsOf(data, ...a);
    const rb = new Map(runsOf(data, ...b).map((r) => [r.seed, r]));
    const both = ra.filter((r) => rb.has(r.seed));
    const x = both.map((r) => areaUnderCurve(r.curve));
    const y = both.map((r) => areaUnderCurve(rb.get(r.seed)!.curve));
    return both.length >= 2 ? pairedTTest(x, y) : null;
  });
  const adjusted = holm(tests.filter((t) => t !== null).map((t) => t.p));
  let k = 0;
  return tests.map((t) => (t ? { ...t, holm: adjusted[k++] as number } : null));
}

function testCells(t: ReturnType<typeof pairedFamily>[number]): string {
  if (!t) return '– | – | – | –';
  const verdict =
    t.holm <= 0.05
      ? t.meanDifference > 0
        ? '**better**'
        : '**worse**'
      : 'no significant difference';
  return `${t.meanDifference >= 0 ? '+' : ''}${pct(t.meanDifference)} [${pct(t.low)}, ${pct(t.high)}] | ${t.p.toFixed(3)} | ${t.holm.toFixed(3)} | ${verdict}`;
}

/** The methods at their registry defaults, and the arms with parameters (`bipace@clusterEpsilon=0.01`). */
export function splitArms(methods: string[]): { atDefaults: string[]; variants: string[] } {
  return {
    atDefaults: methods.filter((m) => !m.includes('@')),
    variants: methods.filter((m) => m.includes('@')),
  };
}

/** An arm's row cells after its name and test: seeds, area, final success, scale and time. */
function armCells(data: ExperimentData, arm: string) {
  const runs = runsOf(data, arm, false);
  const areas = runs.map((r) => areaUnderCurve(r.curve));
  const finals = runs.map((r) => r.curve.at(-1)?.[1] ?? NaN);
  return {
    seeds: runs.length,
    area: `${pct(mean(areas))} ± ${pct(sdOf(areas))}`,
    final: pct(mean(finals)),
    rms: mean(runs.map((r) => mean(r.advantageRms))).toFixed(2),
    time: `${mean(runs.map((r) => r.seconds)).toFixed(0)} s / ${mean(runs.map((r) => r.cpuSeconds)).toFixed(0)} s`,
  };
}

function mainTable(methods: string[], data: ExperimentData): string {
  const others = methods.filter((m) => m !== 'grpo');
  const tests = pairedFamily(
    data,
    others.map((m) => ({ a: [m, false], b: ['grpo', false] })),
  );
  const rows = methods.map((m) => {
    const c = armCells(data, m);
    const test = m === 'grpo' ? '(reference) | | |' : testCells(tests[others.indexOf(m)]!);
    return `| ${m} | ${c.seeds} | ${c.area} | ${c.final} | ${test} | ${c.rms} | ${c.time} |`;
  });
  return `| method | seeds | held-out area, % (mean ± sd over seeds) | final held-out, % | area − GRPO's, points [95 % CI] | p | Holm p | verdict (Holm p ≤ 0.05) | RMS of nonzero advantages | wall / trainer CPU per run |
|---|---:|---:|---:|---:|---:|---:|---|---:|---:|
${rows.join('\n')}`;
}

/**
 * Arms with parameters, each against GRPO and against its own method at the defaults, paired by seed:
 * one Holm family of their own, so adding a variant leaves the main table's family as it was.
 */
function variantTable(variants: string[], data: ExperimentData): string {
  if (!variants.length) return '';
  const pairs = variants.flatMap((v) => [
    { arm: v, against: 'grpo' },
    { arm: v, against: v.split('@')[0]! },
  ]);
  const tests = pairedFamily(
    data,
    pairs.map(({ arm, against }) => ({ a: [arm, false], b: [against, false] })),
  );
  const rows = pairs.map(({ arm, against }, i) => {
    const c = armCells(data, arm);
    return `| ${arm} | ${against} | ${c.seeds} | ${c.area} | ${c.final} | ${testCells(tests[i]!)} | ${c.rms} | ${c.time} |`;
  });
  return `
Arms with parameters: each against GRPO and against its method at the registry defaults, paired by seed
(one Holm family of ${pairs.length} comparisons, apart from the table above).

| arm | against | seeds | held-out area, % | final held-out, % | area − the other's, points [95 % CI] | p | Holm p | verdict (Holm p ≤ 0.05) | RMS of nonzero advantages | wall / trainer CPU per run |
|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|
${rows.join('\n')}
`;
}

function controlTable(data: ExperimentData): string {
  const methods = [...new Set(data.runs.filter((r) => r.whiten).map((r) => r.method))];
  if (!methods.length) return '';
  const tests = pairedFamily(
    data,
    methods.map((m) => ({ a: [m, true], b: [m, false] })),
  );
  const rows = methods.map((m, i) => {
    const areas = runsOf(data, m, true).map((r) => areaUnderCurve(r.curve));
    return `| ${m}, whitened | ${areas.length} | ${pct(mean(areas))} ± ${pct(sdOf(areas))} | ${testCells(tests[i]!)} |`;
  });
  return `
Scale control: the same methods on advantages standardised over each iteration's batch (\`whitenAdvantages\`),
paired with their own unwhitened runs (one Holm family).

| arm | seeds | held-out area, % | area − unwhitened, points [95 % CI] | p | Holm p | verdict |
|---|---:|---:|---:|---:|---:|---|
${rows.join('\n')}
`;
}

function sdOf(xs: number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

function ratesSection(
  plan: ExperimentPlan,
  data: ExperimentData,
): { text: string; series: CurveSeries[] } {
  const runs = data.runs.filter((r) => r.singletonRate.length);
  const perIteration = (pick: (r: RunRecord) => number[]) =>
    Array.from({ length: plan.iterations }, (_, i) =>
      mean(runs.map((r) => pick(r)[i] ?? NaN).filter((v) => !Number.isNaN(v))),
    );
  const singleton = perIteration((r) => r.singletonRate);
  const gate = perIteration((r) => r.gateOnRate);
  const pooled = (pick: (r: RunRecord) => number[]) =>
    mean(runs.flatMap(pick).filter((v) => !Number.isNaN(v)));
  const text = `Mechanisms on this environment's rollouts (every run, every iteration; computed on each run's own
rollouts by the estimators as the server runs them): GiGPO's singleton rate ${pct(pooled((r) => r.singletonRate))} % (per iteration ${pct(Math.min(...singleton))}–${pct(Math.max(...singleton))} %),
Gated-BEPO's gate-on rate ${pct(pooled((r) => r.gateOnRate))} % (per iteration ${pct(Math.min(...gate))}–${pct(Math.max(...gate))} %).`;
  return {
    text,
    series: [
      {
        name: 'GiGPO singleton rate',
        method: 'gigpo',
        points: singleton.map((y, i) => [i + 1, y]),
      },
      {
        name: 'Gated-BEPO gate-on rate',
        method: 'gated-bepo',
        points: gate.map((y, i) => [i + 1, y]),
      },
    ],
  };
}

/** The machine and the day, said when runs are saved: a report rebuilt later (`--report-only`) keeps them. */
export function machineOfRuns(): string {
  return `${machineLine()}; run on ${new Date().toISOString().slice(0, 10)}`;
}

/** The command that reproduces the experiment: the flags that differ from the defaults. */
function commandLine(plan: ExperimentPlan): string {
  const c = DEFAULT_CONFIG;
  const extra = [
    plan.tasksPerIteration === c.tasksPerIteration ? '' : ` --tasks ${plan.tasksPerIteration}`,
    plan.groupSize === c.groupSize ? '' : ` --group-size ${plan.groupSize}`,
    plan.truthIterations === 10 ? '' : ` --truth-iterations ${plan.truthIterations}`,
    plan.evalTasks === 64 ? '' : ` --eval-tasks ${plan.evalTasks}`,
    plan.whitenMethods.length ? ` --whiten-methods ${plan.whitenMethods.join(',')}` : '',
    plan.inProcess ? ' --in-process' : '',
  ].join('');
  return `npm run experiment -- --env ${plan.env} --methods ${plan.methods.join(',')} --seeds ${plan.seeds} --iterations ${plan.iterations}${extra}`;
}

/** Writes the environment's section of `<out>/experiments.md` and its charts beside it. */
export async function writeReport(
  plan: ExperimentPlan,
  evalEvery: number,
  data: ExperimentData,
): Promise<string> {
  const { env, iterations } = plan;
  const { atDefaults: methods, variants } = splitArms(plan.methods);
  // the seeds the data holds (an experiment stopped early has fewer than asked for)
  const seeds = new Set(data.runs.filter((r) => !r.whiten).map((r) => r.seed)).size;
  const curves: CurveSeries[] = plan.methods.map((arm) => {
    const runs = runsOf(data, arm, false);
    const xs = runs[0]?.curve.map(([x]) => x) ?? [];
    // an arm with parameters: its method's colour, dashed
    return {
      name: arm,
      method: arm.split('@')[0]!,
      dashed: arm.includes('@'),
      points: xs.map(
        (x, i) => [x, mean(runs.map((r) => r.curve[i]?.[1] ?? 0))] as [number, number],
      ),
    };
  });
  await mkdir(plan.outDir, { recursive: true });
  const png = `experiments-${env}.png`;
  await writeChart(plan.outDir, png, 'held-out success', curves);
  const rates = ratesSection(plan, data);
  const ratesPng = `experiments-${env}-rates.png`;
  await writeChart(plan.outDir, ratesPng, 'rate', rates.series);
  const c = DEFAULT_CONFIG;
  const total = data.runs.reduce((a, r) => a + r.seconds, 0);
  const totalCpu = data.runs.reduce((a, r) => a + r.cpuSeconds, 0);
  const file = path.join(plan.outDir, 'experiments.md');
  writeSection(
    `experiment:${env}`,
    `## ${env}: ${methods.length} methods${variants.length ? ` and ${variants.length} ${variants.length === 1 ? 'arm' : 'arms'} with parameters` : ''}, ${seeds === plan.seeds ? `${seeds} paired seeds` : `up to ${seeds} of ${plan.seeds} paired seeds (the seeds column says how many each method has)`}, ${iterations} iterations

Command: \`${commandLine(plan)}\`.
Runs: ${plan.inProcess ? 'trained in process (`--in-process`: the same loop, the advantages from the estimator library as the server computes them)' : 'trained on a Creditlab server'}.
Machine: ${data.machine ?? machineOfRuns()}; ${data.runs.length} runs took ${(total / 60).toFixed(0)} min of wall time and ${(totalCpu / 60).toFixed(0)} min of trainer CPU (${plan.inProcess ? 'advantages included' : "the server's CPU comes on top"}; the machine was shared).
Trainer defaults (apps/trainer/src/config.ts): B = ${plan.tasksPerIteration} tasks × G = ${plan.groupSize} rollouts per iteration, PPO-clip
(ε ${c.ppo.clip}, ${c.ppo.epochs} epochs × ${c.ppo.minibatches} minibatches, Adam ${c.ppo.learningRate}, entropy ${c.ppo.entropyCoef}), bag-of-tokens policy (${c.policy.hidden} hidden) with a trained value head (PPO-GAE's critic), each method at its
registry defaults. Held-out success: the sampling policy, 4 rollouts on each of ${plan.evalTasks} evaluation tasks (held-out seeds), every ${evalEvery} iterations.
Primary measure: the area under the held-out curve (mean success over the evaluations, trapezoid rule), compared with GRPO's by a
paired t-test over seeds, Holm-adjusted over the ${methods.length - 1} comparisons; a difference is claimed only where the adjusted p is ≤ 0.05.

${mainTable(methods, data)}
${variantTable(variants, data)}${controlTable(data)}
![mean held-out success per iteration](${png})

Curves: mean held-out success over seeds (y from 0 to 100 %; x: iterations up to ${iterations}, one point per evaluation); the legend names the methods, each in its colour of the web app (libs/charts)${variants.length ? '; an arm with parameters is dashed, in its method’s colour' : ''}.

${rates.text}

![per-iteration singleton and gate-on rates](${ratesPng})

Rates per iteration, mean over runs (y from 0 to 100 %; x: iteration).

${valueLossTable(plan, data)}
${truthSection(plan, data)}`,
    file,
    '# Experiments\n\nWritten by `npm run experiment`, one section per environment; observations are written by hand below each.\n',
  );
  return file;
}

/** A line chart of per-iteration series as PNG and SVG (libs/charts: legend and labelled axes). */
async function writeChart(
  dir: string,
  png: string,
  yName: string,
  series: CurveSeries[],
): Promise<void> {
  const chart = chartImages(
    lineChartOption({ xName: 'iteration', yName, percent: true, static: true, series }),
  );
  await writeFile(path.join(dir, png), chart.png);
  await writeFile(path.join(dir, png.replace(/\.png$/, '.svg')), chart.svg);
}
