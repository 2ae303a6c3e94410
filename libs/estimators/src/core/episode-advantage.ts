import type { ColumnarBatch } from '../batch/columnar-batch';
import type { Normalize } from './group-stats';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

export type EpisodeStats = 'trajectories' | 'steps';

export interface EpisodeTermParams {
  normalize: Normalize;
  episodeStats: EpisodeStats;
  epsilon: number;
}

export interface EpisodeTerm {
  /** A^E_i, one per trajectory. */
  advantage: Float64Array;
  /** μ and σ used per task group (σ = 1, μ = 0 for a singleton, as the reference). */
  mean: Float64Array;
  std: Float64Array;
}

/**
 * GRPO's group-relative episode advantage (docs/estimators.md §1.9), shared by every method
 * with an episode term. Per task group, X = {R_i} (`episodeStats =
 * "trajectories"`) or the multiset with each R_i repeated T_i times (`"steps"`,
 * the verl-agent default). |X| = 1 → μ = 0, σ = 1; else μ = mean(X), σ =
 * unbiased std(X). A^E_i = (R_i − μ)/(σ + ε) or R_i − μ.
 */
export function episodeAdvantage(
  batch: ColumnarBatch,
  R: Float64Array,
  p: EpisodeTermParams,
): EpisodeTerm {
  const advantage = new Float64Array(batch.trajectoryCount);
  const mean = new Float64Array(batch.groupCount);
  const std = new Float64Array(batch.groupCount);
  const gOff = batch.groupTrajectoryOffsets;
  const sOff = batch.trajectoryStepOffsets;
  const bySteps = p.episodeStats === 'steps';
  for (let g = 0; g < batch.groupCount; g++) {
    const lo = intAt(gOff, g);
    const hi = intAt(gOff, g + 1);
    const weight = (i: number) => (bySteps ? intAt(sOff, i + 1) - intAt(sOff, i) : 1);
    let n = 0;
    let sum = 0;
    let allEqual = true;
    for (let i = lo; i < hi; i++) {
      n += weight(i);
      sum += weight(i) * at(R, i);
      if (R[i] !== R[lo]) allEqual = false;
    }
    let mu: number;
    let sigma: number;
    if (n === 1) {
      mu = 0;
      sigma = 1;
    } else if (allEqual) {
      mu = at(R, lo);
      sigma = 0;
    } else {
      mu = sum / n;
      let ss = 0;
      for (let i = lo; i < hi; i++) ss += weight(i) * (at(R, i) - mu) ** 2;
      sigma = Math.sqrt(ss / (n - 1));
    }
    mean[g] = mu;
    std[g] = sigma;
    for (let i = lo; i < hi; i++) {
      const centred = at(R, i) - mu;
      advantage[i] = p.normalize === 'mean-std' ? centred / (sigma + p.epsilon) : centred;
    }
  }
  return { advantage, mean, std };
}
