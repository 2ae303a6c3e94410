import { bootstrapGroups, pearson, type GroupedScore, type Interval } from '@creditlab/stats';
import { returnsToGo } from '../ppo-batch';
import type { TextPolicy } from '../policy/text-policy';
import type { TaskDraws } from './draws';
import { QUALITY_ROWS, wireGroup, type BatchStep, type QualityRow } from './methods';
import { GradientCosines } from './gradient-cosine';
import { taskGradients } from './policy-gradient';

/** What the harness reports for one row at one snapshot and group size. */
export interface RowQuality {
  row: string;
  kind: QualityRow['kind'];
  /** Mean within-group Pearson correlation with the truth, over every group of every draw. */
  groupCorrelation: Interval;
  /** That minus GRPO's, on the same groups. */
  groupCorrelationVsGrpo: Interval;
  /** Pearson correlation with the truth over all steps of all draws. */
  pooledCorrelation: number | null;
  /** Per target step across the K draws, on the truth's scale (each row rescaled to the truth's RMS). */
  bias2: Interval;
  variance: Interval;
  /**
   * Cosine between the policy gradient from the row's advantages and from the exact ones, mean over
   * the first draws [interval over resampled tasks]; and that minus GRPO's and minus the plain
   * return's, on the same resamples.
   */
  gradientCosine: Interval;
  gradientCosineVsGrpo: Interval;
  gradientCosineVsPlain: Interval;
}

export interface MeasureOptions {
  gamma: number;
  /** Draws whose batch gradient is compared (a backward pass per row and draw). */
  gradientDraws: number;
  resamples: number;
  seed: number;
}

interface Collected {
  /** Per task: the within-group correlations of its draws. */
  correlations: (number | null)[][];
  /** Per task, per target step: the row's K estimates. */
  targetEstimates: number[][][];
  pooled: { a: number[]; t: number[] };
}

/**
 * Every row on the draws of one snapshot and group size: each draw's T groups form one batch (as a
 * training iteration would), every row estimates it, and the figures are collected per task so that
 * the bootstrap resamples tasks (a task's draws share its target and its task).
 */
export function measure(
  policy: TextPolicy,
  draws: TaskDraws[],
  options: MeasureOptions,
): RowQuality[] {
  const K = draws[0]?.companions.length ?? 0;
  const collected = QUALITY_ROWS.map((): Collected => ({
    correlations: draws.map(() => []),
    targetEstimates: draws.map((d) => d.target.steps.map(() => [])),
    pooled: { a: [], t: [] },
  }));
  const cosines = new GradientCosines(QUALITY_ROWS.length, draws.length);
  for (let k = 0; k < K; k++) {
    const { trajectories, groups, steps, truth, decisions } = drawBatch(draws, k, options.gamma);
    const offsets = taskOffsets(trajectories);
    const exactGradients =
      k < options.gradientDraws ? taskGradients(policy, decisions, truth, offsets) : undefined;
    if (exactGradients) cosines.beginDraw(exactGradients);
    QUALITY_ROWS.forEach((row, r) => {
      const adv = row.advantages(groups, steps, options.gamma);
      const c = collected[r]!;
      let at = 0;
      trajectories.forEach((ts, task) => {
        const size = ts.reduce((n, t) => n + t.steps.length, 0);
        const a = adv.subarray(at, at + size);
        const t = truth.subarray(at, at + size);
        c.correlations[task]!.push(pearson(a, t));
        ts[0]!.steps.forEach((_, j) => c.targetEstimates[task]![j]!.push(a[j] as number));
        at += size;
      });
      c.pooled.a.push(...adv);
      c.pooled.t.push(...truth);
      if (exactGradients) {
        // a row equal to the truth (the `truth` row) has the exact gradients: backward passes saved
        const gradients = sameValues(adv, truth)
          ? exactGradients
          : taskGradients(policy, decisions, adv, offsets);
        cosines.addRow(r, gradients);
      }
    });
  }
  return summarise(collected, cosines, draws, options);
}

/** Where each task's steps start in a draw's batch (task-major), and the end. */
export function taskOffsets(trajectories: { steps: unknown[] }[][]): number[] {
  const offsets = [0];
  for (const ts of trajectories)
    offsets.push(offsets.at(-1)! + ts.reduce((n, t) => n + t.steps.length, 0));
  return offsets;
}

/** Draw k's batch: per task the target and its companions, as estimator input, steps and decisions. */
export function drawBatch(draws: TaskDraws[], k: number, gamma: number) {
  const trajectories = draws.map((d) => [d.target, ...(d.companions[k] ?? [])]);
  const groups = draws.map((d, i) => wireGroup(d.taskSeed, trajectories[i]!));
  const steps: BatchStep[] = trajectories.flatMap((ts) =>
    ts.flatMap((t) => {
      const g = returnsToGo(
        t.steps.map((s) => s.record.reward),
        gamma,
      );
      return t.steps.map((s, j) => ({
        trueAdvantage: s.record.trueAdvantage as number,
        trueValue: s.record.trueValue as number,
        returnToGo: g[j] as number,
      }));
    }),
  );
  const truth = Float64Array.from(steps, (s) => s.trueAdvantage);
  const decisions = trajectories.flatMap((ts) =>
    ts.flatMap((t) =>
      t.steps.map((s) => ({ observation: s.record.state, actions: s.actions, chosen: s.chosen })),
    ),
  );
  return { trajectories, groups, steps, truth, decisions };
}

function summarise(
  collected: Collected[],
  cosines: GradientCosines,
  draws: TaskDraws[],
  options: MeasureOptions,
): RowQuality[] {
  const truthOf = (task: number, j: number) =>
    draws[task]!.target.steps[j]!.record.trueAdvantage as number;
  // a row constant over a group (GRPO where all returns are equal) says nothing there: scored 0
  const corrScores = collected.map((c) =>
    perTask(c.correlations.map((rs) => rs.map((x) => x ?? 0))),
  );
  const grpo = QUALITY_ROWS.findIndex((r) => r.name === 'grpo');
  const plain = QUALITY_ROWS.findIndex((r) => r.kind === 'baseline-free');
  const biasVar = collected.map((c) => {
    // a common scale: each row's estimates times the factor that gives them the truth's RMS over the
    // target steps (every draw), so bias and variance are in the truth's units for every row
    let saa = 0;
    let stt = 0;
    let count = 0;
    c.targetEstimates.forEach((stepsOf, task) =>
      stepsOf.forEach((ests, j) =>
        ests.forEach((a) => {
          saa += a * a;
          stt += truthOf(task, j) ** 2;
          count++;
        }),
      ),
    );
    const scale = saa === 0 || count === 0 ? 0 : Math.sqrt(stt / saa);
    const bias2 = c.targetEstimates.map((stepsOf, task) =>
      stepsOf.map((ests, j) => (scale * mean(ests) - truthOf(task, j)) ** 2),
    );
    const variance = c.targetEstimates.map((stepsOf) =>
      stepsOf.map((ests) => scale * scale * populationVariance(ests)),
    );
    return { bias2: perTask(bias2), variance: perTask(variance) };
  });
  const boot = bootstrapGroups(
    [...corrScores, ...biasVar.map((b) => b.bias2), ...biasVar.map((b) => b.variance)],
    corrScores.map((_, r) => [r, grpo] as [number, number]),
    { resamples: options.resamples, seed: options.seed },
  );
  const n = collected.length;
  const gradient = cosines.intervals([grpo, plain], {
    resamples: options.resamples,
    seed: options.seed,
  });
  return QUALITY_ROWS.map((row, r) => {
    const c = collected[r]!;
    return {
      row: row.name,
      kind: row.kind,
      groupCorrelation: boot.scores[r]!,
      groupCorrelationVsGrpo: boot.differences[r]!,
      pooledCorrelation: pearson(c.pooled.a, c.pooled.t),
      bias2: boot.scores[n + r]!,
      variance: boot.scores[2 * n + r]!,
      gradientCosine: gradient.cosine[r]!,
      gradientCosineVsGrpo: gradient.vs[0]![r]!,
      gradientCosineVsPlain: gradient.vs[1]![r]!,
    };
  });
}

/** A mean over items, tasks as the bootstrap's clusters: per task [count, sum]. */
function perTask(values: number[][]): GroupedScore {
  const stats = new Float64Array(values.length * 2);
  values.forEach((vs, i) => {
    stats[2 * i] = vs.length;
    stats[2 * i + 1] = vs.reduce((a, b) => a + b, 0);
  });
  return {
    width: 2,
    stats,
    score: ([count, sum]) => (count ? (sum as number) / (count as number) : NaN),
  };
}

function sameValues(a: Float64Array, b: Float64Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);

function populationVariance(xs: number[]): number {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length || 1);
}
