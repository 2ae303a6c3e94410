import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Interval } from '@creditlab/stats';
import { machineLine, writeSection } from '@creditlab/report';
import type { RowQuality } from './measure';
import type { QualityPlan, QualityResult } from './quality-run';
import { writeChart } from './quality-charts';
import { sanityTable } from './sanity-check';

const f2 = (x: number | null | undefined) =>
  x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2);
const ci = (i: Interval) => `${f2(i.estimate)} [${f2(i.low)}, ${f2(i.high)}]`;
const sci = (x: number | null) =>
  x === null ? '–' : Math.abs(x) < 1e-12 ? '0' : x.toExponential(1);

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
  return `| row | pooled Pearson | within-group Pearson − GRPO's [95 % CI] | bias² per step, given the target [CI] | variance over draws per step, given the target [CI] | gradient cosine [CI] | gradient cosine − GRPO's [CI] |
|---|---:|---:|---:|---:|---:|---:|
${rows
  .map(
    (r) =>
      `| ${r.row} | ${f2(r.pooledCorrelation)} | ${ci(r.groupCorrelationVsGrpo)} | ${sci(r.bias2.estimate)} [${sci(r.bias2.low)}, ${sci(r.bias2.high)}] | ${sci(r.variance.estimate)} [${sci(r.variance.low)}, ${sci(r.variance.high)}] | ${ci(r.gradientCosine)} | ${ci(r.gradientCosineVsGrpo)} |`,
  )
  .join('\n')}`;
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
policy, γ ${plan.gamma}. Intervals: 95 %, bootstrap over tasks (${plan.resamples} resamples). Gradient cosine: mean over the first ${plan.gradientDraws} draws,
its interval resampling tasks (the same resample in every draw).
Bias² and variance are conditional on the target trajectory, which stays fixed across the draws: bias² includes the noise of the
target's own sampled return, and a row computed from the target alone (the truth, both return rows, PPO-GAE with the frozen critic)
has variance 0 by construction.

${result.snapshots
  .map(
    (
      s,
    ) => `### ${result.env}, snapshot at iteration ${s.iteration} (training success ${(100 * s.successRate).toFixed(0)} %)

Within-group Pearson correlation with the truth, mean over every group of every draw [95 % CI]:

${correlationTable(result, s)}
${sanityTable(s)}
At G = ${claimsG}:

${detailTable(s.bySize.find((b) => b.groupSize === claimsG)?.rows ?? s.bySize[0]!.rows)}
${claimsTable(s)}`,
  )
  .join('\n')}
![within-group correlation with the truth by group size](${png})

![within-group correlation with the truth by snapshot](${bySnapshotPng})

Charts: within-group Pearson correlation with the truth (y) against the group size G at the last snapshot (first chart; points at ${plan.groupSizes.join(', ')}), and against the snapshot's training success at G = ${plan.claimsGroupSize} (second chart). The legend names every row drawn: the eight estimators (RLOO's line lies on GRPO's: within a group the two are affine in each other, so their correlations are equal), and dashed the oracle reference (return − exact V) and the plain return; the tables have every row.`;
  const file = path.join(outDir, 'estimator-quality.md');
  writeSection(
    `quality:${result.env}`,
    body,
    file,
    '# Estimator quality against the exact truth\n',
  );
  return file;
}
