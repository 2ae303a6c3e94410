import { pearson, type Interval } from '@creditlab/stats';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import { selectBackend } from '../policy/backend';
import { Learner } from '../learner';
import { pool } from './claims';
import { nllQuintiles, optimalMixByQuintile } from './optimal-mix';
import { sampleDraws, streamFor, type TaskDraws } from './draws';
import { GradientCosines } from './gradient-cosine';
import { drawBatch, taskOffsets } from './measure';
import { taskGradients } from './policy-gradient';
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
 *   node scripts/run-entry.mjs apps/trainer/src/quality/diagnose-main.ts ENV [G,G,...] [MIN]
 *
 * (default errand-tiny, group sizes 4,8,16, every snapshot; MIN: only snapshots whose training
 * success is above it, e.g. 0.5 for the sanity check's).
 *
 * Prints markdown tables on stdout.
 */
const SEED = 1;
const GAMMA = 0.95;
const TASKS = 16;
const DRAWS = 16;
const GRADIENT_DRAWS = 4;
const RESAMPLES = 1000;

async function main(env: string, sizes: number[], minSuccess: number): Promise<void> {
  await selectBackend();
  const { config, snapshots } = await trainSnapshots(env, [0, 0.25, 0.5, 0.75], 30, SEED);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    `# ${env}\n\nCosine with the exact policy gradient (mean of the first ${GRADIENT_DRAWS} draws) [95 % CI, tasks resampled, ${RESAMPLES} resamples]:\n`,
  );
  out(
    "| snapshot | G | truth, trajectory means | GRPO | Dr.GRPO (mean only) | episode return, no baseline | discounted return-to-go (plain return) | GRPO − plain return | GRPO − Dr.GRPO (std division) | Dr.GRPO − episode return (group baseline) | episode return − return-to-go (one value per trajectory) | truth's trajectory means − GRPO | within-trajectory share of the exact gradient |",
  );
  out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const mixes: string[] = [];
  for (const snap of snapshots.filter((s) => s.successRate > minSuccess)) {
    const learner = new Learner(config);
    if (snap.checkpoint) await learner.restore(snap.checkpoint);
    const label = `${snap.iteration} (${(100 * snap.successRate).toFixed(0)} %)`;
    for (const G of sizes) {
      const rand = streamFor(env, SEED, snap.iteration, G, 'draws');
      // the first draws do not depend on how many follow: K = 4 gives the harness's first 4
      const K = G === 8 && minSuccess < 0 ? DRAWS : GRADIENT_DRAWS;
      const draws = sampleDraws(env, learner.policy, TASKS, G, K, GAMMA, rand);
      out(`| ${label} | ${G} | ${gradientParts(learner.policy, draws).join(' | ')} |`);
      // GACA's λ* (the second diagnosis) on every snapshot only: not with a MIN
      if (G === 8 && minSuccess < 0) mixes.push(...mixTable(draws, label));
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
 * The ladder's gradient cosines with the exact gradient, from per-task gradients of the first 4
 * draws (so with intervals over resampled tasks, as the harness's): [truth's trajectory means, each
 * LADDER row], each step of the ladder as a difference with its interval, and the share
 * |g_within|²/|g|² of the exact gradient that the within-trajectory part of the truth carries.
 */
function gradientParts(policy: Learner['policy'], draws: TaskDraws[]): string[] {
  const cosines = new GradientCosines(LADDER.length + 2, draws.length);
  let share = 0;
  for (let k = 0; k < GRADIENT_DRAWS; k++) {
    const { trajectories, groups, truth, decisions } = drawBatch(draws, k, GAMMA);
    const batch = columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups });
    const lengths = trajectories.flat().map((t) => t.steps.length);
    const offsets = taskOffsets(trajectories);
    const grad = (a: Float64Array) => taskGradients(policy, decisions, a, offsets);
    const exact = grad(truth);
    cosines.beginDraw(exact);
    cosines.addRow(0, exact);
    const means = grad(trajectoryMeans(truth, lengths));
    cosines.addRow(1, means);
    LADDER.forEach(([m, p], i) => cosines.addRow(i + 2, grad(estimate(batch, m, p).advantages)));
    const total = (gs: Float64Array[]) => gs.reduce((acc, g) => acc.map((x, j) => x + g[j]!));
    const x = total(exact);
    const within = total(means).map((v, j) => x[j]! - v);
    const norm2 = (v: Float64Array) => v.reduce((acc, y) => acc + y * y, 0);
    share += norm2(within) / norm2(x);
  }
  // rows: 0 truth, 1 trajectory means, 2 GRPO, 3 Dr.GRPO, 4 episode return, 5 return-to-go (plain)
  const { cosine, vs } = cosines.intervals([5, 4, 3, 2], { resamples: RESAMPLES, seed: SEED });
  const ci = (i: Interval) => `${f2(i.estimate)} [${f2(i.low)}, ${f2(i.high)}]`;
  return [
    ...[1, 2, 3, 4, 5].map((r) => ci(cosine[r]!)),
    ci(vs[0]![2]!), // GRPO − plain return
    ci(vs[2]![2]!), // GRPO − Dr.GRPO: dividing by the group's std
    ci(vs[1]![3]!), // Dr.GRPO − episode return: the group mean as baseline
    ci(vs[0]![4]!), // episode return − return-to-go: one value per trajectory instead of per step
    ci(vs[3]![1]!), // truth's trajectory means − GRPO
    f2(share / GRADIENT_DRAWS),
  ];
}

const f2 = (x: number | null) => (x === null ? '–' : x.toFixed(2));

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

const [envArg, sizesArg, minArg] = process.argv.slice(2);
main(
  envArg ?? 'errand-tiny',
  (sizesArg ?? '4,8,16').split(',').map(Number),
  minArg === undefined ? -1 : Number(minArg),
).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`diagnose: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
