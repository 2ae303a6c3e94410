import { criticalityScores, leaveOneOutNll } from '../core/criticality';
import { episodeTerm } from '../core/episode-advantage';
import { groupRelative } from '../core/group-stats';
import { groupingSummary, groupSizeDiagnostics } from '../core/grouping-summary';
import { rewardToGo } from '../core/returns';
import { exactStepGroups } from '../core/step-groups';
import {
  episodeStatsParam,
  epsilonParam,
  gammaParam,
  normalizeParam,
  stepWeightParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

const unitParam = (dflt: number, description: string) =>
  ({ type: 'number', default: dflt, min: 0, max: 1, description }) as const;
const slopeParam = (description: string) =>
  ({ type: 'number', default: 2, min: 0, description }) as const;

/**
 * GACA: Granularity-Adaptive Credit Assignment (docs/estimators.md §2.6).
 *
 *   A_{i,t} = λ_t·w·A^S_{i,t} + (1 − λ_t)·A^E_i
 * A^E is the GRPO episode term; A^S the GiGPO step term on exact anchor groups
 * (g with γ), where a singleton takes A^S := A^E (`singletonFallback =
 * "episode"`, CHOICE C10) or 0 (`"zero"`, GiGPO's rule).
 * Criticality per trajectory, from the rollout policy's mean token NLL H_t:
 *   ê_t = H_t / mean_t(H)              (mean ≤ 0 → 1; zero-token steps: 1, left out of the mean, C12)
 *   Δ_1 = 0, Δ_t = |g_t − g_{t−1}|      (C11);  d̂_t = Δ_t / mean_t(Δ)   (mean 0 → 1)
 *   score_t = α_c·ê_t + (1 − α_c)·d̂_t ;  c_t = score_t / mean_t(score)
 * Debiased (C14): H_t is replaced by the leave-one-out mean H of the step's
 * anchor group; steps where that is undefined (singletons) get c_t = 1, and the
 * means run over the other steps.
 * Mixing weight, continuous and λ_0 at c = 1:
 *   c ≥ 1: λ_t = min(λ_0·(1 + α_λ·(c_t − 1)), 1)     c < 1: λ_t = max(λ_0·(1 − β_λ·(1 − c_t)), 0)
 * Defaults: γ = 0.99, α_c = 1, λ_0 = 0.5, α_λ = β_λ = 2, w = 1 (C13).
 */
export const gaca = defineMethod({
  name: 'gaca',
  version: '1',
  description:
    'GACA: per-step mix of GiGPO step and episode terms, weighted by the policy NLL at the step',
  paper: 'GACA, "Granularity-Adaptive Credit Assignment" (arXiv 2609.12424)',
  params: {
    gamma: gammaParam(0.99),
    stepWeight: stepWeightParam,
    normalize: normalizeParam,
    episodeStats: episodeStatsParam,
    epsilon: epsilonParam,
    alphaC: unitParam(1, 'α_c: weight of NLL (vs return change) in the criticality score'),
    lambda0: unitParam(0.5, 'λ_0: mixing weight at criticality 1'),
    alphaLambda: slopeParam('α_λ: slope of λ_t for criticality above 1'),
    betaLambda: slopeParam('β_λ: slope of λ_t for criticality below 1'),
    singletonFallback: {
      type: 'enum',
      values: ['episode', 'zero'],
      default: 'episode',
      description: 'step term of a singleton anchor group: the episode term, or 0 as GiGPO',
    },
    debiased: {
      type: 'boolean',
      default: false,
      description: 'score steps by the leave-one-out NLL of their anchor group',
    },
  },
  requires: ['nll'],
  diagnostics: [
    { name: 'nll', kind: 'number', description: 'H_t, mean token NLL under the rollout policy' },
    { name: 'criticality', kind: 'number', description: 'c_t' },
    { name: 'lambda', kind: 'number', description: 'mixing weight λ_t' },
    { name: 'advEpisode', kind: 'number', description: 'episode term A^E' },
    { name: 'advStep', kind: 'number', description: 'step term A^S after the singleton fallback' },
    { name: 'stepGroupSize', kind: 'integer', description: 'members of the anchor group' },
    { name: 'singleton', kind: 'boolean', description: 'the anchor group has one member' },
  ],
  estimate(batch, p) {
    const advEpisode = episodeTerm(batch, p);
    const g = rewardToGo(batch, p.gamma);
    const groups = exactStepGroups(batch);
    const { term: advStep, stats } = groupRelative(g, groups, p.normalize, p.epsilon);
    const sizes = groupSizeDiagnostics(groups.bucketOf, stats.count);
    if (p.singletonFallback === 'episode') {
      for (let k = 0; k < batch.stepCount; k++)
        if (sizes.singleton[k]) advStep[k] = at(advEpisode, k);
    }
    const H = p.debiased ? leaveOneOutNll(batch.nll, groups) : batch.nll;
    const criticality = criticalityScores(batch, H, g, p.alphaC, !p.debiased);
    const lambda = new Float64Array(batch.stepCount);
    const advantages = new Float64Array(batch.stepCount);
    for (let k = 0; k < batch.stepCount; k++) {
      const l = mixingWeight(at(criticality, k), p);
      lambda[k] = l;
      advantages[k] = l * p.stepWeight * at(advStep, k) + (1 - l) * at(advEpisode, k);
    }
    return {
      advantages,
      diagnostics: { nll: batch.nll.slice(), criticality, lambda, advEpisode, advStep, ...sizes },
      summary: { ...groupingSummary(stats.count, 'stepGroup'), ...lambdaSummary(lambda) },
    };
  },
});

/** λ_t: λ_0 at c = 1, with slope α_λ above and β_λ below, clipped to [0, 1]. */
function mixingWeight(
  c: number,
  p: { lambda0: number; alphaLambda: number; betaLambda: number },
): number {
  return c >= 1
    ? Math.min(p.lambda0 * (1 + p.alphaLambda * (c - 1)), 1)
    : Math.max(p.lambda0 * (1 - p.betaLambda * (1 - c)), 0);
}

function lambdaSummary(lambda: Float64Array) {
  const histogram = new Int32Array(10);
  let sum = 0;
  let atZero = 0;
  let atOne = 0;
  for (const l of lambda) {
    sum += l;
    if (l === 0) atZero++;
    if (l === 1) atOne++;
    const bin = Math.min(9, Math.floor(l * 10));
    histogram[bin] = intAt(histogram, bin) + 1;
  }
  const n = lambda.length || 1;
  return {
    lambdaMean: sum / n,
    lambdaHistogram: Array.from(histogram),
    lambdaAtZero: atZero / n,
    lambdaAtOne: atOne / n,
  };
}
