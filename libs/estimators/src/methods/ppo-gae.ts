import { plus } from '../core/elementwise';
import { rangeStats } from '../core/group-stats';
import { gaeScan, tdResiduals } from '../core/returns';
import { bootstrapTruncatedParam, gaeLambdaParam, gammaParam } from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at } = typedReads;

/**
 * PPO with step-level ("turn-level") GAE over a learned critic (docs/estimators.md §2.4).
 *
 * Index convention: `value[t]` is V(s_t), the critic's estimate of the state the
 * step's action was taken in; r_t is the reward after that action.
 *   V_next(t) = V(s_{t+1})                                     t < T
 *   V_next(T) = 0                                              success / failure
 *   V_next(T) = bootstrapTruncated ? nextValue (absent → 0) : 0  truncated
 * (a truncated end's nextValue is the batch's `bootstrapValue`)
 *   δ_t = r_t + γ·V_next(t) − V(s_t)
 *   A_T = δ_T,  A_t = δ_t + γλ·A_{t+1}
 *   returnTarget_t = A_t + V(s_t)   (critic target, before whitening)
 * `whiten = "batch_steps"`: A ← (A − mean)/√(var + 1e-8) over all step records
 * (unbiased var; a one-record batch gives 0).
 * Defaults (CHOICE C7): γ = λ = 0.95 (verl's own are 1.0).
 */
export const ppoGae = defineMethod({
  name: 'ppo-gae',
  version: '1',
  description: 'PPO with GAE over the critic values recorded with each step',
  paper: 'Schulman et al. 2016, "High-dimensional continuous control using GAE" (arXiv 1506.02438)',
  params: {
    gamma: gammaParam(0.95),
    lambda: gaeLambdaParam(0.95),
    bootstrapTruncated: bootstrapTruncatedParam,
    whiten: {
      type: 'enum',
      values: ['none', 'batch_steps'],
      default: 'none',
      description: 'whiten advantages over all step records of the batch',
    },
  },
  requires: ['value'],
  inputs: (p) => (p.bootstrapTruncated ? ['value', 'bootstrap'] : ['value']),
  diagnostics: [
    { name: 'value', kind: 'number', description: 'critic value V(s_t)' },
    { name: 'delta', kind: 'number', description: 'TD residual δ_t' },
    { name: 'advRaw', kind: 'number', description: 'GAE advantage before whitening' },
    { name: 'returnTarget', kind: 'number', description: 'critic regression target A_t + V(s_t)' },
  ],
  estimate(batch, p) {
    const { value } = batch;
    const bootstrap = p.bootstrapTruncated ? batch.bootstrapValue : null;
    const delta = tdResiduals(batch, value, bootstrap, p.gamma);
    const advRaw = gaeScan(batch, delta, p.gamma * p.lambda);
    const advantages = p.whiten === 'batch_steps' ? whiten(advRaw) : advRaw.slice();
    return {
      advantages,
      diagnostics: { value: value.slice(), delta, advRaw, returnTarget: plus(advRaw, value) },
      summary: {},
    };
  },
});

/** (x − mean)/√(var + 1e-8) over all step records; 0 for a one-record batch. */
function whiten(x: Float64Array): Float64Array {
  const out = new Float64Array(x.length);
  if (x.length < 2) return out;
  const { mean, std } = rangeStats(x, 0, x.length);
  // Past about 1e154, std² overflows; there √(std² + 1e-8) is std itself.
  const variance = std * std + 1e-8;
  const scale = 1 / (variance === Infinity ? std : Math.sqrt(variance));
  for (let k = 0; k < x.length; k++) out[k] = (at(x, k) - mean) * scale;
  return out;
}
