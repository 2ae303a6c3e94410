import type { ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';
import { overflowSafeStd, type Normalize } from './group-stats';
import { broadcastToSteps, episodeReturns } from './returns';

const { at, intAt } = typedReads;

export type EpisodeStats = 'trajectories' | 'steps';

export interface EpisodeTermParams {
  normalize: Normalize;
  episodeStats: EpisodeStats;
  epsilon: number;
}

/**
 * The GRPO episode term A^E, per step (docs/estimators.md §1.9): every step of trajectory i
 * carries A^E_i. GRPO is this term alone; GiGPO, GACA, Gated-BEPO and BiPACE add a step term.
 */
export function episodeTerm(batch: ColumnarBatch, p: EpisodeTermParams): Float64Array {
  return broadcastToSteps(batch, episodeAdvantages(batch, episodeReturns(batch), p));
}

/**
 * A^E_i, one per trajectory. Per task group, X = {R_i} (`episodeStats = "trajectories"`) or the
 * multiset with each R_i repeated T_i times (`"steps"`, the verl-agent default):
 *   |X| = 1 → μ = 0, σ = 1;   else μ = mean(X), σ = unbiased std(X)
 *   A^E_i = (R_i − μ)/(σ + ε)  ("mean-std")   or   R_i − μ  ("mean")
 */
function episodeAdvantages(
  batch: ColumnarBatch,
  R: Float64Array,
  p: EpisodeTermParams,
): Float64Array {
  const advantage = new Float64Array(batch.trajectoryCount);
  const weight = episodeWeights(batch, p.episodeStats);
  const off = batch.groupTrajectoryOffsets;
  for (let g = 0; g < batch.groupCount; g++) {
    const lo = intAt(off, g);
    const hi = intAt(off, g + 1);
    const { mu, sigma } = weightedStats(R, weight, lo, hi);
    for (let i = lo; i < hi; i++) {
      const centred = at(R, i) - mu;
      advantage[i] = p.normalize === 'mean-std' ? centred / (sigma + p.epsilon) : centred;
    }
  }
  return advantage;
}

/** How many members of X each trajectory stands for: 1, or T_i with `episodeStats = "steps"`. */
export function episodeWeights(batch: ColumnarBatch, episodeStats: EpisodeStats): Int32Array {
  const weight = new Int32Array(batch.trajectoryCount).fill(1);
  if (episodeStats === 'steps') {
    const off = batch.trajectoryStepOffsets;
    for (let i = 0; i < batch.trajectoryCount; i++) weight[i] = intAt(off, i + 1) - intAt(off, i);
  }
  return weight;
}

/**
 * μ and σ of X = R[lo..hi) with multiplicities `weight`: μ = 0 and σ = 1 for a single member
 * (verl's rule); exactly the common value and 0 when all R are equal.
 */
function weightedStats(R: Float64Array, weight: Int32Array, lo: number, hi: number) {
  let n = 0;
  let sum = 0;
  let allEqual = true;
  for (let i = lo; i < hi; i++) {
    n += intAt(weight, i);
    sum += intAt(weight, i) * at(R, i);
    if (R[i] !== R[lo]) allEqual = false;
  }
  if (n === 1) return { mu: 0, sigma: 1 };
  if (allEqual) return { mu: at(R, lo), sigma: 0 };
  const mu = sum / n;
  let ss = 0;
  for (let i = lo; i < hi; i++) ss += intAt(weight, i) * (at(R, i) - mu) ** 2;
  const sigma = Math.sqrt(ss / (n - 1));
  if (sigma !== Infinity) return { mu, sigma };
  return {
    mu,
    sigma: overflowSafeStd(n, (visit) => {
      for (let i = lo; i < hi; i++) visit(at(R, i) - mu, intAt(weight, i));
    }),
  };
}
