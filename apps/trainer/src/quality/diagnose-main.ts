import { pearson } from '@creditlab/stats';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import { selectBackend } from '../policy/backend';
import { Learner } from '../learner';
import { pool } from './claims';
import { nllQuintiles, optimalMixByQuintile } from './optimal-mix';
import { sampleDraws, streamFor, type TaskDraws } from './draws';
import { drawBatch } from './measure';
import { cosine, policyGradient } from './policy-gradient';
import { trainSnapshots } from './snapshots';

/**
 * Two diagnoses of figures in docs/estimator-quality.md, measured on the harness's own snapshots and
 * draws (its seed, streams and default sizes, so the same rollouts as `npm run quality`):
 *
 * - gradients: how much of the exact policy gradient an advantage that is constant along each
 *   trajectory (GRPO's kind) can reach at all, against the plain return, which varies along it;
 * - GACA's error-optimal weight λ* = α/(α+β) per NLL quintile, with bootstrap intervals (tasks
 *   resampled) of α + β and of λ*: a ratio whose denominator's interval holds 0 is not determined.
 *
 *   node scripts/run-entry.mjs apps/trainer/src/quality/diagnose-main.ts errand-tiny
 *
 * Prints markdown tables on stdout.
 */
const SEED = 1;
const GAMMA = 0.95;
const TASKS = 16;
const DRAWS = 16;
const GRADIENT_DRAWS = 4;
const RESAMPLES = 1000;

async function main(env: string): Promise<void> {
  await selectBackend();
  const { config, snapshots } = await trainSnapshots(env, [0, 0.25, 0.5, 0.75], 30, SEED);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    `# ${env}\n\nCosine with the exact policy gradient (mean of the first ${GRADIENT_DRAWS} draws):\n`,
  );
  out(
    '| snapshot | G | truth, trajectory means | GRPO | Dr.GRPO (mean only) | episode return, no baseline | discounted return-to-go (plain return) | within-trajectory share of the exact gradient |',
  );
  out('|---|---:|---:|---:|---:|---:|---:|---:|');
  const mixes: string[] = [];
  for (const snap of snapshots) {
    const learner = new Learner(config);
    if (snap.checkpoint) await learner.restore(snap.checkpoint);
    for (const G of [4, 8, 16]) {
      const rand = streamFor(env, SEED, snap.iteration, G, 'draws');
      // the first draws do not depend on how many follow: K = 4 gives the harness's first 4
      const K = G === 8 ? DRAWS : GRADIENT_DRAWS;
      const draws = sampleDraws(env, learner.policy, TASKS, G, K, GAMMA, rand);
      const g = gradientParts(learner.policy, draws);
      out(
        `| ${snap.iteration} (${(100 * snap.successRate).toFixed(0)} %) | ${G} | ${g.map((x) => x.toFixed(2)).join(' | ')} |`,
      );
      if (G === 8)
        mixes.push(
          ...mixTable(draws, `${snap.iteration} (${(100 * snap.successRate).toFixed(0)} %)`),
        );
    }
    learner.dispose();
  }
  out(
    '\n| snapshot | NLL quintile | Pearson(A^S, A^E) | α + β, 95 % CI | λ* = α/(α+β) [95 % CI] | determined |',
  );
  out('|---|---:|---:|---:|---:|---|');
  for (const line of mixes) out(line);
}

/**
 * From GRPO to the plain return one change at a time, each an estimator of the library on the same
 * batch: GRPO (group mean and std), Dr.GRPO (group mean only), the episode return (no baseline, still one
 * value per trajectory), the discounted reward-to-go (the plain return: varies along the trajectory).
 * The step whose cosine moves most is what the plain return has that GRPO lacks.
 */
const LADDER: [string, Record<string, unknown>][] = [
  ['grpo', {}],
  ['grpo', { normalize: 'mean' }],
  ['reinforce', { returnType: 'episode' }],
  ['reinforce', { gamma: GAMMA }],
];

/**
 * Per draw (the first 4): the cosine with the exact gradient of the truth's trajectory means (the
 * gradient is linear in the advantages, so g − g_mean is the within-trajectory part's), of each
 * LADDER row, and the share |g_within|²/|g|²; means over the draws.
 */
function gradientParts(policy: Learner['policy'], draws: TaskDraws[]): number[] {
  const sums = new Array<number>(LADDER.length + 2).fill(0);
  for (let k = 0; k < GRADIENT_DRAWS; k++) {
    const { trajectories, groups, truth, decisions } = drawBatch(draws, k, GAMMA);
    const batch = columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups });
    const lengths = trajectories.flat().map((t) => t.steps.length);
    const grad = (a: Float64Array) => policyGradient(policy, decisions, a);
    const gTruth = grad(truth);
    const gMean = grad(trajectoryMeans(truth, lengths));
    const within = gTruth.map((x, i) => x - gMean[i]!);
    const norm2 = (v: Float64Array) => v.reduce((a, x) => a + x * x, 0);
    const cosines = [
      cosine(gMean, gTruth) ?? 0,
      ...LADDER.map(([m, p]) => cosine(grad(estimate(batch, m, p).advantages), gTruth) ?? 0),
      norm2(within) / norm2(gTruth),
    ];
    cosines.forEach((c, i) => (sums[i]! += c));
  }
  return sums.map((s) => s / GRADIENT_DRAWS);
}

/** Each step's value replaced by its trajectory's mean (trajectories of `lengths`, in order). */
function trajectoryMeans(values: Float64Array, lengths: number[]): Float64Array {
  const out = new Float64Array(values.length);
  let at = 0;
  for (const n of lengths) {
    let sum = 0;
    for (let j = at; j < at + n; j++) sum += values[j]!;
    out.fill(n ? sum / n : 0, at, at + n);
    at += n;
  }
  return out;
}

/** GACA's λ* by NLL quintile as the claim computes it, with the correlation of its two terms. */
function mixTable(draws: TaskDraws[], label: string): string[] {
  const p = pool(draws);
  const col = (k: string) => p.columns.get(k)!;
  const columns = {
    nll: col('nll'),
    step: col('gaca.advStep'),
    episode: col('gaca.advEpisode'),
    truth: col('trueAdvantage'),
    offsets: p.offsets,
  };
  const all = Array.from({ length: p.offsets.at(-1)! }, (_, i) => i);
  const quintiles = nllQuintiles(all, columns.nll);
  const f = (x: number) => (Math.abs(x) >= 100 ? x.toExponential(1) : x.toFixed(2));
  return optimalMixByQuintile(columns, { resamples: RESAMPLES, seed: SEED }).map((q, b) => {
    const corr = pearson(
      quintiles[b]!.map((i) => columns.step[i]!),
      quintiles[b]!.map((i) => columns.episode[i]!),
    );
    return `| ${label} | ${b + 1} | ${corr === null ? '–' : corr.toFixed(2)} | [${f(q.sumInterval[0])}, ${f(q.sumInterval[1])}] | ${f(q.lambda)} [${f(q.lambdaInterval[0])}, ${f(q.lambdaInterval[1])}] | ${q.determined ? 'yes' : 'no: the interval of α + β holds 0'} |`;
  });
}

main(process.argv[2] ?? 'errand-tiny').then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`diagnose: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
