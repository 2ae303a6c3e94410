import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { lineChartOption } from '@creditlab/charts';
import { machineLine, writeSection } from '@creditlab/report';
import { DEFAULT_CONFIG } from './config';
import type { ExperimentPlan } from './experiment-command';
import type { IterationReport } from './iteration';
import { chartImages } from './chart-image';

export interface RunResult {
  method: string;
  seed: number;
  reports: IterationReport[];
  seconds: number;
}

export interface TruthRow {
  method: string;
  steps: number;
  pearson: number | null;
  spearman: number | null;
  signAgreement: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
const fmt = (x: number | null) => (x === null ? '–' : x.toFixed(2));
const evalCurve = (reports: IterationReport[]) =>
  reports
    .filter((r) => r.evaluation !== undefined)
    .map((r) => [r.iteration + 1, r.evaluation as number] as [number, number]);

/** The command that reproduces the experiment: the flags that differ from the defaults. */
function commandLine(plan: ExperimentPlan): string {
  const c = DEFAULT_CONFIG;
  const extra = [
    plan.tasksPerIteration === c.tasksPerIteration ? '' : ` --tasks ${plan.tasksPerIteration}`,
    plan.groupSize === c.groupSize ? '' : ` --group-size ${plan.groupSize}`,
    plan.truthIterations === 10 ? '' : ` --truth-iterations ${plan.truthIterations}`,
  ].join('');
  return `npm run experiment -- --env ${plan.env} --methods ${plan.methods.join(',')} --seeds ${plan.seeds} --iterations ${plan.iterations}${extra}`;
}

function tableRow(method: string, results: RunResult[]): string {
  const runs = results.filter((r) => r.method === method);
  const finals = runs.map((r) => evalCurve(r.reports).at(-1)?.[1] ?? 0);
  const bests = runs.map((r) => Math.max(0, ...evalCurve(r.reports).map(([, y]) => y)));
  const to80 = runs.map((r) => evalCurve(r.reports).find(([, y]) => y >= 0.8)?.[0]);
  const reached = to80.filter((x): x is number => x !== undefined);
  const firstTrain = mean(runs.map((r) => r.reports[0]?.successRate ?? 0));
  return `| ${method} | ${(100 * mean(finals)).toFixed(0)} % (${finals.map((f) => (100 * f).toFixed(0)).join(', ')}) | ${(100 * mean(bests)).toFixed(0)} % | ${reached.length ? `${mean(reached).toFixed(0)} (${reached.length}/${runs.length} seeds)` : `not reached`} | ${(100 * firstTrain).toFixed(0)} % | ${mean(runs.map((r) => r.seconds)).toFixed(0)} s |`;
}

function truthSection(plan: ExperimentPlan, truth: TruthRow[]): string {
  if (!truth.length) return '';
  return `
Against the truth: a GRPO run of ${plan.truthIterations} iterations (seed 1) logs every step's exact advantage under the rollout
policy (\`trueAdvantage\`, γ ${DEFAULT_CONFIG.trueAdvantageGamma}); \`compare(...) { againstReference }\` then scores every method on those
identical rollouts (${truth[0]!.steps} steps).

| method | Pearson with the true advantage | Spearman | sign agreement |
|---|---:|---:|---:|
${truth.map((t) => `| ${t.method} | ${fmt(t.pearson)} | ${fmt(t.spearman)} | ${(100 * t.signAgreement).toFixed(0)} % |`).join('\n')}`;
}

/** Writes the environment's section of `<out>/experiments.md` and its learning-curve PNG beside it. */
export async function writeReport(
  plan: ExperimentPlan,
  evalEvery: number,
  results: RunResult[],
  truth: TruthRow[],
): Promise<string> {
  const { env, methods, seeds, iterations } = plan;
  const series = methods.map((method) => {
    const curves = results.filter((r) => r.method === method).map((r) => evalCurve(r.reports));
    const xs = curves[0]?.map(([x]) => x) ?? [];
    return {
      name: method,
      method,
      points: xs.map((x, i) => [x, mean(curves.map((c) => c[i]?.[1] ?? 0))] as [number, number]),
    };
  });
  await mkdir(plan.outDir, { recursive: true });
  const png = `experiments-${env}.png`;
  const chart = chartImages(
    lineChartOption({
      xName: 'iteration',
      yName: 'held-out success',
      percent: true,
      static: true,
      series,
    }),
  );
  await writeFile(path.join(plan.outDir, png), chart.png);
  await writeFile(path.join(plan.outDir, png.replace(/\.png$/, '.svg')), chart.svg);
  const c = DEFAULT_CONFIG;
  const file = path.join(plan.outDir, 'experiments.md');
  // One section per environment; hand-written observations outside the markers survive a re-run.
  writeSection(
    `experiment:${env}`,
    `## ${env}: ${methods.length} methods, ${seeds} paired seeds, ${iterations} iterations

Command: \`${commandLine(plan)}\`.
Machine: ${machineLine()}; run on ${new Date().toISOString().slice(0, 10)}.
Trainer defaults (apps/trainer/src/config.ts): B = ${plan.tasksPerIteration} tasks × G = ${plan.groupSize} rollouts per iteration, PPO-clip
(ε ${c.ppo.clip}, ${c.ppo.epochs} epochs × ${c.ppo.minibatches} minibatches, Adam ${c.ppo.learningRate}, entropy ${c.ppo.entropyCoef}), bag-of-tokens policy (${c.policy.hidden} hidden), each method at its
registry defaults. Held-out success: the sampling policy, 4 rollouts on each of ${c.evalTasks} evaluation tasks (held-out seeds), every ${evalEvery} iterations.

| method | final held-out success (per seed) | best held-out | iterations to 80 % held-out | training success, iteration 1 (untrained policy) | wall time per run |
|---|---:|---:|---:|---:|---:|
${methods.map((m) => tableRow(m, results)).join('\n')}

![mean held-out success per iteration](${png})

Curves: mean held-out success over seeds (y from 0 to 100 %; x: iterations up to ${iterations}, one point per evaluation); the legend names the methods, each in its colour of the web app (libs/charts).
${truthSection(plan, truth)}`,
    file,
    '# Experiments\n\nWritten by `npm run experiment`, one section per environment; observations are written by hand below each.\n',
  );
  return file;
}
