import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Interval } from '@creditlab/stats';
import { machineLine, writeSection } from '@creditlab/report';
import { lineChartOption } from '@creditlab/charts';
import { chartImages } from '../chart-image';
import type { RowQuality } from './measure';
import type { QualityPlan, QualityResult } from './quality-run';

const f2 = (x: number | null | undefined) =>
  x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2);
const ci = (i: Interval) => `${f2(i.estimate)} [${f2(i.low)}, ${f2(i.high)}]`;
const sci = (x: number | null) =>
  x === null ? '–' : Math.abs(x) < 1e-12 ? '0' : x.toExponential(1);
const GROUP_BASELINES = ['grpo', 'rloo', 'gigpo', 'gaca', 'gated-bepo', 'gagpo', 'bipace'];

function correlationTable(result: QualityResult, s: QualityResult['snapshots'][number]): string {
  const names = s.bySize[0]?.rows.map((r) => r.row) ?? [];
  const cell = (G: number, name: string) =>
    ci(s.bySize.find((b) => b.groupSize === G)!.rows.find((r) => r.row === name)!.groupCorrelation);
  const sizes = s.bySize.map((b) => b.groupSize);
  void result;
  return `| row | ${sizes.map((G) => `G = ${G}`).join(' | ')} |
|---|${sizes.map(() => '---:').join('|')}|
${names.map((n) => `| ${n} | ${sizes.map((G) => cell(G, n)).join(' | ')} |`).join('\n')}`;
}

function detailTable(rows: RowQuality[]): string {
  return `| row | pooled Pearson | within-group Pearson − GRPO's [95 % CI] | bias² per step, given the target [CI] | variance over draws per step, given the target [CI] | gradient cosine (mean, min–max over draws; no interval) |
|---|---:|---:|---:|---:|---:|
${rows
  .map(
    (r) =>
      `| ${r.row} | ${f2(r.pooledCorrelation)} | ${ci(r.groupCorrelationVsGrpo)} | ${sci(r.bias2.estimate)} [${sci(r.bias2.low)}, ${sci(r.bias2.high)}] | ${sci(r.variance.estimate)} [${sci(r.variance.low)}, ${sci(r.variance.high)}] | ${f2(r.gradientCosine.mean)} (${f2(r.gradientCosine.min)}–${f2(r.gradientCosine.max)}) |`,
  )
  .join('\n')}`;
}

/**
 * Once success is above one half, the group baselines should beat the plain return. Within a group a
 * baseline that is constant over the group cannot change a Pearson correlation (it is a shift), so
 * the check cannot be made on that measure: the report says so and shows the measure a baseline does
 * move, the policy-gradient cosine, marking where its mean is lower than the plain return's too (no
 * interval: a few draws), which the shift does not explain.
 */
function sanity(s: QualityResult['snapshots'][number], gradientDraws: number): string {
  if (s.successRate <= 0.5) return '';
  const lines = s.bySize.map((b) => {
    const row = (name: string) => b.rows.find((r) => r.row === name)!;
    const plain = row('return (no baseline)');
    const p = plain.groupCorrelation.estimate ?? 0;
    const losers = b.rows.filter(
      (r) => GROUP_BASELINES.includes(r.row) && (r.groupCorrelation.estimate ?? 0) <= p,
    );
    const cos = losers.map(
      (r) =>
        `${r.row} ${f2(r.gradientCosine.mean)} vs ${f2(plain.gradientCosine.mean)}${(r.gradientCosine.mean ?? 0) < (plain.gradientCosine.mean ?? 0) ? ' (lower here too)' : ''}`,
    );
    return `G = ${b.groupSize}: ${losers.length ? `below the plain return (${f2(p)}): ${losers.map((r) => `${r.row} ${f2(r.groupCorrelation.estimate)}`).join(', ')}; gradient cosine ${cos.join(', ')}` : `every group baseline beats the plain return (${f2(p)})`}`;
  });
  return `\nSanity check (success above one half, so a group baseline should beat the plain return): ${lines.join('; ')}.
The within-group correlation cannot make this check: a baseline constant over the group is a shift and leaves a within-group
correlation unchanged, so only what varies inside the group counts (GRPO and RLOO give every step of a trajectory the same
episode-level value, while the plain return-to-go varies along the trajectory with the discount). A baseline shows in the policy
gradient instead (its variance): the gradient cosines are given beside each such row, mean of ${gradientDraws} draws with no interval.
Where a row's cosine is lower than the plain return's too ("lower here too"), the shift does not explain it and nothing measured
here does: the check is not passed there, and that is not established either way without intervals.\n`;
}

/** What the claims' criteria cannot see, said beside every claims table. */
const CLAIMS_NOTE = `Reading the claims: GACA's λ* = α/(α + β) is not confined to [0, 1] (GACA's λ is), so the λ–λ* Spearman
compares rank orders only, and a λ* below 0 or above 1 is not a mixing weight. BiPACE's ε is calibrated on the same draws the
criterion then judges, and its purity measure was corrected (commit a70d002: clusters keyed by group and id) after the criteria
were fixed.`;

function claimsTable(s: QualityResult['snapshots'][number]): string {
  if (!s.claims.length) return '';
  return `\n| claim | criterion (fixed before the run) | measured | verdict |
|---|---|---|---|
${s.claims.map((c) => `| ${c.claim} | ${c.criterion} | ${c.measured} | ${c.pass ? '**pass**' : '**fail**'} |`).join('\n')}

${CLAIMS_NOTE}\n`;
}

/** Writes one environment's section of `<out>/estimator-quality.md` and its chart. */
export function writeQualityReport(
  plan: QualityPlan,
  result: QualityResult,
  outDir: string,
  command: string,
): string {
  mkdirSync(outDir, { recursive: true });
  const png = `estimator-quality-${result.env}.png`;
  const bySnapshotPng = `estimator-quality-${result.env}-snapshots.png`;
  const last = result.snapshots.at(-1);
  const correlation = (rows: RowQuality[], name: string) =>
    rows.find((r) => r.row === name)?.groupCorrelation.estimate ?? NaN;
  writeChart(outDir, png, 'group size G', (name) =>
    (last?.bySize ?? []).map((b) => [b.groupSize, correlation(b.rows, name)] as [number, number]),
  );
  writeChart(
    outDir,
    bySnapshotPng,
    'training success of the snapshot (G = 8)',
    (name) =>
      result.snapshots.map((snap) => {
        const at = snap.bySize.find((b) => b.groupSize === plan.claimsGroupSize) ?? snap.bySize[0]!;
        return [snap.successRate, correlation(at.rows, name)] as [number, number];
      }),
    true,
  );
  const claimsG = plan.claimsGroupSize;
  const body = `## ${result.env}

Command: \`${command}\`. Machine: ${machineLine()}; ${(result.seconds / 60).toFixed(1)} min of wall time, ${(result.cpuSeconds / 60).toFixed(1)} min of CPU (the machine was shared).
Snapshots: a GiGPO run of ${plan.snapshotIterations} iterations (seed ${plan.seed}, trainer defaults, trained in process), its weights at the first
iteration whose training success reached ${plan.levels.map((l) => `${100 * l} %`).join(', ')}: ${result.snapshots.map((s) => `iteration ${s.iteration} (${(100 * s.successRate).toFixed(0)} %)`).join(', ')}.
Per snapshot and group size G: ${plan.tasks} training tasks, each with one fixed target trajectory and ${plan.draws} draws of its G − 1 companions;
each draw's ${plan.tasks} groups form one batch, as a training iteration would. Truth: Q(s,a) − V(s) of the latent state under the snapshot's
policy, γ ${plan.gamma}. Intervals: 95 %, bootstrap over tasks (${plan.resamples} resamples). Gradient cosine on the first ${plan.gradientDraws} draws.
Bias² and variance are conditional on the target trajectory, which stays fixed across the draws: bias² includes the noise of the
target's own sampled return, and a row computed from the target alone (the truth, both return rows, PPO-GAE with the frozen critic)
has variance 0 by construction. The gradient cosine has no interval yet: mean and min–max over ${plan.gradientDraws} draws.

${result.snapshots
  .map(
    (
      s,
    ) => `### ${result.env}, snapshot at iteration ${s.iteration} (training success ${(100 * s.successRate).toFixed(0)} %)

Within-group Pearson correlation with the truth, mean over every group of every draw [95 % CI]:

${correlationTable(result, s)}
${sanity(s, plan.gradientDraws)}
At G = ${claimsG}:

${detailTable(s.bySize.find((b) => b.groupSize === claimsG)?.rows ?? s.bySize[0]!.rows)}
${claimsTable(s)}`,
  )
  .join('\n')}
![within-group correlation with the truth by group size](${png})

![within-group correlation with the truth by snapshot](${bySnapshotPng})

Charts: within-group Pearson correlation with the truth (y) against the group size G at the last snapshot (first chart; points at ${plan.groupSizes.join(', ')}), and against the snapshot's training success at G = ${plan.claimsGroupSize} (second chart). The legend names every row drawn: the estimators, and dashed the oracle reference (return − exact V) and the plain return; the tables have every row.`;
  const file = path.join(outDir, 'estimator-quality.md');
  writeSection(
    `quality:${result.env}`,
    body,
    file,
    '# Estimator quality against the exact truth\n',
  );
  return file;
}

// The estimators, and dashed the oracle reference and the no-baseline return (the tables have every row).
const CHART_ROWS: { name: string; dashed?: boolean }[] = [
  { name: 'return − exact V', dashed: true },
  { name: 'return (no baseline)', dashed: true },
  ...['grpo', 'ppo-gae', 'gigpo', 'gaca', 'gated-bepo', 'gagpo', 'bipace'].map((name) => ({
    name,
  })),
];

/** One line per chart row, as PNG and SVG (libs/charts: legend and labelled axes). */
function writeChart(
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
      series: CHART_ROWS.map(({ name, dashed }) => ({
        name,
        // the dashed references take the colours of the methods they stand nearest to in kind
        method:
          name === 'return − exact V'
            ? 'reinforce'
            : name === 'return (no baseline)'
              ? 'rloo'
              : name,
        dashed,
        points: points(name),
      })),
    }),
  );
  writeFileSync(path.join(outDir, png), chart.png);
  writeFileSync(path.join(outDir, png.replace(/\.png$/, '.svg')), chart.svg);
}
