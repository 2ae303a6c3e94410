import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { groupStats, rangeStats } from '../core/group-stats';
import { bucketSizes } from '../core/grouping-summary';
import { gaeScan, rewardToGo, tdResiduals, valuesAt } from '../core/returns';
import { exactStepGroups } from '../core/step-groups';
import {
  bootstrapTruncatedParam,
  epsilonParam,
  gaeLambdaParam,
  gammaParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at } = typedReads;

/**
 * GAGPO: GAE over a non-parametric, group-estimated value (docs/estimators.md §2.8).
 *
 *   V̂(s)    = mean{ g_m : m ∈ 𝒢(k, s) }   (every visit of s in the task group, itself included); V̂(⊥) = 0
 *   δ_{i,t} = r_{i,t} + γ·V̂(s_{i,t+1}) − V̂(s_{i,t})                     t < T
 *   δ_{i,T} = r_{i,T} + γ·b − V̂(s_{i,T}),  b = V̂(nextState) for a truncated end with
 *             `bootstrapTruncated` and a nextState seen in the group, else 0
 *             (that nextState is the batch's `bootstrapStateId`)
 *   Â       = GAE of δ with γλ
 *   A       = (Â − mean(Â_k))/(std(Â_k) + ε) over the task group's step records ("mean-std"),
 *             Â − mean ("mean") or Â ("none"); a one-record group gives 0 when normalised.
 * There is no episode term. λ = 1 without normalisation gives g − V̂ = GiGPO's
 * mean-norm step term; λ = 0 gives r + γV̂(s') − V̂(s).
 * Defaults (C20): γ = λ = 0.95; normalisation over all step records of the task group (C21).
 */
export const gagpo = defineMethod({
  name: 'gagpo',
  version: '1',
  description:
    'GAGPO: GAE with the group mean return of each state as its value, normalised per task group',
  paper: 'GAGPO, "Generalized Advantage Grouped Policy Optimization" (arXiv 2605.13217)',
  params: {
    gamma: gammaParam(0.95),
    lambda: gaeLambdaParam(0.95),
    bootstrapTruncated: bootstrapTruncatedParam,
    normalize: {
      type: 'enum',
      values: ['mean-std', 'mean', 'none'],
      default: 'mean-std',
      description: 'normalisation of the GAE advantages within the task group ("none" = raw GAE)',
    },
    epsilon: epsilonParam,
  },
  requires: [],
  diagnostics: [
    { name: 'value', kind: 'number', description: 'value proxy V̂(s_t)' },
    { name: 'delta', kind: 'number', description: 'TD residual δ_t' },
    { name: 'advRaw', kind: 'number', description: 'GAE advantage before normalisation' },
    {
      name: 'stepGroupSize',
      kind: 'integer',
      description: 'visits of the state in the task group',
    },
  ],
  estimate(batch, p) {
    const g = rewardToGo(batch, p.gamma);
    const groups = exactStepGroups(batch);
    const proxy = groupStats(g, groups.bucketOf, groups.bucketCount);
    const value = valuesAt(proxy.mean, batch.stateId);
    const bootstrap = p.bootstrapTruncated ? valuesAt(proxy.mean, batch.bootstrapStateId) : null;
    const delta = tdResiduals(batch, value, bootstrap, p.gamma);
    const advRaw = gaeScan(batch, delta, p.gamma * p.lambda);
    const advantages =
      p.normalize === 'none'
        ? advRaw.slice()
        : normalizePerGroup(batch, advRaw, p.normalize === 'mean-std', p.epsilon);
    return {
      advantages,
      diagnostics: {
        value,
        delta,
        advRaw,
        stepGroupSize: bucketSizes(groups.bucketOf, proxy.count),
      },
      summary: {},
    };
  },
});

/** x normalised over the step records of each task group: (x − μ)/(σ + ε) or x − μ; 0 alone. */
function normalizePerGroup(
  batch: ColumnarBatch,
  x: Float64Array,
  withStd: boolean,
  epsilon: number,
): Float64Array {
  const out = new Float64Array(x.length);
  for (let grp = 0; grp < batch.groupCount; grp++) {
    const [lo, hi] = groupStepRange(batch, grp);
    if (hi - lo < 2) continue; // Â − Â = 0
    const { mean, std } = rangeStats(x, lo, hi);
    for (let k = lo; k < hi; k++) {
      const centred = at(x, k) - mean;
      out[k] = withStd ? centred / (std + epsilon) : centred;
    }
  }
  return out;
}
