import * as tf from '@tensorflow/tfjs';
import { chosenLogProbs, type Decision, type TextPolicy } from '../policy/text-policy';

/**
 * The policy-gradient direction a batch's advantages give: ∇θ Σ_t A_t·log π(a_t|s_t) over the policy's
 * weights (the value head aside), flattened. What PPO's first step follows, before clipping.
 */
export function policyGradient(
  policy: TextPolicy,
  steps: (Decision & { chosen: number })[],
  advantages: ArrayLike<number>,
): Float64Array {
  const weights = [policy.E, policy.W, policy.b, policy.U];
  const { grads } = tf.variableGrads(() => {
    const { logProbs } = policy.forward(steps);
    const lp = chosenLogProbs(
      logProbs,
      steps.map((s) => s.chosen),
    );
    return tf.sum(tf.mul(lp, tf.tensor1d(Array.from(advantages)))) as tf.Scalar;
  }, weights);
  const parts = weights.map((w) => grads[w.name]?.dataSync() ?? new Float32Array(w.size));
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  tf.dispose(Object.values(grads));
  return out;
}

/**
 * The batch's policy gradient split by task: one gradient per task over that task's steps
 * (`offsets[i]` to `offsets[i + 1]`, task-major). They sum to the batch's gradient (up to float32
 * rounding), so a resample of tasks sums them: what the gradient cosine's bootstrap resamples.
 */
export function taskGradients(
  policy: TextPolicy,
  steps: (Decision & { chosen: number })[],
  advantages: ArrayLike<number>,
  offsets: ArrayLike<number>,
): Float64Array[] {
  return Array.from({ length: offsets.length - 1 }, (_, i) => {
    const from = offsets[i] as number;
    const to = offsets[i + 1] as number;
    return policyGradient(
      policy,
      steps.slice(from, to),
      Array.prototype.slice.call(advantages, from, to) as number[],
    );
  });
}

/** Cosine of the angle between two vectors; null if either is zero. */
export function cosine(a: Float64Array, b: Float64Array): number | null {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += (a[i] as number) * (b[i] as number);
    aa += (a[i] as number) ** 2;
    bb += (b[i] as number) ** 2;
  }
  return aa === 0 || bb === 0 ? null : ab / Math.sqrt(aa * bb);
}
