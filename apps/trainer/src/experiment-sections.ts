import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeSection } from '@creditlab/report';
import type { Interval } from '@creditlab/stats';
import { DEFAULT_CONFIG } from './config';
import type { ExperimentPlan } from './experiment-command';
import type { ExperimentData } from './experiment-data';
import { TRUTH_BOOTSTRAP, type TruthRow } from './experiment-truth';

/** The markers' id of an environment's truth table, nested in its section: `--truth-only` replaces it alone. */
export const truthSectionId = (env: string): string => `experiment-truth:${env}`;

const fixed = (x: number | null, digits = 2) => (x === null ? '–' : x.toFixed(digits));
const signed = (x: number | null) => (x !== null && x >= 0 ? `+${fixed(x)}` : fixed(x));

/** `0.31 [0.27, 0.35]`; signed for a difference. */
function interval(iv: Interval | null, show: (x: number | null) => string = fixed): string {
  if (!iv || iv.estimate === null) return '–';
  return iv.low === null
    ? show(iv.estimate)
    : `${show(iv.estimate)} [${show(iv.low)}, ${show(iv.high)}]`;
}

const percent = (x: number) => `${(100 * x).toFixed(1)} %`;

/** The command that rebuilds the truth table alone, from a new truth run. */
function truthCommand(plan: ExperimentPlan): string {
  const truth = plan.truthIterations === 10 ? '' : ` --truth-iterations ${plan.truthIterations}`;
  return `npm run experiment -- --env ${plan.env} --methods ${plan.methods.join(',')}${truth} --truth-only${plan.inProcess ? ' --in-process' : ''}`;
}

/** Every method against the exact advantages of the truth run, within groups first, with intervals ('' if none). */
export function truthBody(plan: ExperimentPlan, data: ExperimentData): string {
  const rows = (data.truth?.rows ?? []) as Partial<TruthRow>[];
  if (!rows.length) return '';
  return rows[0]!.groupPearson === undefined
    ? `The data file's scores against the truth predate the intervals; \`${truthCommand(plan)}\` scores them again.`
    : truthTable(plan, rows as TruthRow[]);
}

/** The truth table between its own markers, nested in the environment's section. */
export function truthSection(plan: ExperimentPlan, data: ExperimentData): string {
  const body = truthBody(plan, data);
  const id = truthSectionId(plan.env);
  return body && `<!-- bench:${id}:start -->\n${body}\n<!-- bench:${id}:end -->`;
}

function truthTable(plan: ExperimentPlan, rows: TruthRow[]): string {
  const t = rows[0]!;
  const line = (r: TruthRow) =>
    `| ${r.method} | ${interval(r.groupPearson)} | ${interval(r.groupSpearman)} | ${interval(r.pearson)} | ${interval(r.signAgreement, (x) => (x === null ? '–' : `${(100 * x).toFixed(0)} %`))} of ${r.bothNonzero} | ${percent(r.zeroFraction)} | ${r.method === 'grpo' ? '(reference)' : interval(r.groupPearsonMinusGrpo, signed)} |`;
  return `Against the truth: a GRPO run of ${plan.truthIterations} iterations (seed 1) logs every step's exact advantage under the rollout
policy (\`trueAdvantage\`, γ ${DEFAULT_CONFIG.trueAdvantageGamma}); every method is scored on those identical rollouts (${t.steps} steps in ${t.groups} task
groups), as \`compare(...) { againstReference intervals }\` scores them (libs/stats). Within-group: each task group's
correlation, averaged over the groups where it is defined (the task is fixed, as in credit assignment); pooled: over all
steps at once. Sign agreement counts only the steps where both values are nonzero; the truth is exactly 0 on
${percent(t.truthZeroFraction)} of the steps. Intervals: 95 % percentile bootstrap, ${TRUTH_BOOTSTRAP.resamples} resamples of the task groups (seed ${TRUTH_BOOTSTRAP.seed}),
every method and difference on the same resamples. These are the rollouts of one policy early in training (GRPO's first
iterations); [estimator-quality.md](estimator-quality.md) measures frozen snapshots across success levels. The truth is
the latent state's advantage: where observations do not determine that state, no method acting on observations can
reach it. This table alone: \`${truthCommand(plan)}\`.

| method | within-group Pearson [95 % CI] | within-group Spearman [95 % CI] | pooled Pearson [95 % CI] | sign agreement [95 % CI] of steps both nonzero | method's zeros | within-group Pearson − GRPO's [95 % CI] |
|---|---:|---:|---:|---:|---:|---:|
${rows.map(line).join('\n')}`;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);

/** Per arm: the value head's loss at iteration 1, at its lowest mean, and at the last iteration. */
export function valueLossTable(plan: ExperimentPlan, data: ExperimentData): string {
  const arms = [
    ...plan.methods.map((m) => ({ name: m, method: m, whiten: false })),
    ...[...new Set(data.runs.filter((r) => r.whiten).map((r) => r.method))].map((m) => ({
      name: `${m}, whitened`,
      method: m,
      whiten: true,
    })),
  ];
  const rows = arms.flatMap(({ name, method, whiten }) => {
    const runs = data.runs.filter((r) => r.method === method && r.whiten === whiten);
    const at = (i: number) => runs.map((r) => r.valueLoss[i]).filter(isNumber);
    // an iteration no run has a loss for is left out (NaN never compares lower)
    const means = Array.from({ length: plan.iterations }, (_, i) =>
      at(i).length ? mean(at(i)) : NaN,
    );
    if (!runs.length || !at(0).length) return [];
    const low = means.reduce((best, m, i) => (m < means[best]! ? i : best), 0);
    const cell = (i: number) => {
      const xs = at(i);
      if (!xs.length) return '–';
      return `${mean(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)})`;
    };
    return [
      `| ${name} | ${runs.length} | ${cell(0)} | ${low + 1}: ${cell(low)} | ${cell(plan.iterations - 1)} |`,
    ];
  });
  if (!rows.length) return '';
  return `The value head's loss (\`valueLoss\`: its mean squared error against the iteration's discounted returns, after the
update; every arm trains it, only PPO-GAE uses it), mean over seeds (lowest–highest seed):

| arm | seeds | iteration 1 | lowest mean, at iteration | iteration ${plan.iterations} |
|---|---:|---:|---:|---:|
${rows.join('\n')}
`;
}

const isNumber = (x: number | null | undefined): x is number =>
  typeof x === 'number' && !Number.isNaN(x);

/** Throws unless the environment's section holds the truth table's markers (what `--truth-only` replaces). */
export async function checkTruthSection(plan: ExperimentPlan): Promise<string> {
  const file = path.join(plan.outDir, 'experiments.md');
  const marker = `<!-- bench:${truthSectionId(plan.env)}:start -->`;
  const doc = await readFile(file, 'utf8').catch(() => '');
  if (!doc.includes(marker))
    throw new Error(
      `${file} has no truth table of ${plan.env} to replace (no ${marker}): write the whole section first, without --truth-only`,
    );
  return file;
}

/** Replaces only the truth table of the environment's section, leaving the rest as its experiment wrote it. */
export async function writeTruthSection(
  plan: ExperimentPlan,
  data: ExperimentData,
): Promise<string> {
  const file = await checkTruthSection(plan);
  writeSection(truthSectionId(plan.env), truthBody(plan, data), file, '');
  return file;
}
