import * as tf from '@tensorflow/tfjs';
import { chosenLogProbs, type Decision, type TextPolicy } from './text-policy';

export interface PpoSample extends Decision {
  /** Index of the action taken. */
  chosen: number;
  /** log π_old(a|s) recorded at rollout. */
  oldLogProb: number;
  advantage: number;
  /** The critic's regression target for this state (the discounted return-to-go); used with a critic. */
  valueTarget?: number;
}

export interface PpoConfig {
  /** Clip range ε of the probability ratio. */
  clip: number;
  /** Passes over the batch. */
  epochs: number;
  /** Gradient steps per pass: the batch is shuffled and split into this many minibatches. */
  minibatches: number;
  learningRate: number;
  /** Weight of the entropy bonus. */
  entropyCoef: number;
}

export interface PpoMetrics {
  loss: number;
  /** Mean of log π_old − log π_new over the batch after the update (an estimate of KL(old‖new)). */
  approxKl: number;
  clipFraction: number;
  entropy: number;
  /** With a critic: mean squared error of the value head against the targets, after the update. */
  valueLoss?: number;
}

/**
 * PPO-clip on a batch of steps, each step one action-level decision (the
 * advantage is the step's, shared by all its tokens in an LLM; here one action):
 *   L = −mean_t min(ρ_t·A_t, clip(ρ_t, 1−ε, 1+ε)·A_t) − c_H·mean_t H(π(·|s_t)),
 *   ρ_t = exp(log π_θ(a_t|s_t) − log π_old(a_t|s_t)).
 */
export function ppoUpdate(
  policy: TextPolicy,
  batch: PpoSample[],
  cfg: PpoConfig,
  optimizer = tf.train.adam(cfg.learningRate),
  /** Shuffles the minibatches (seeded by the caller, so a run's updates are reproducible). */
  rand: () => number = Math.random,
  /**
   * Trains the value head too: after each minibatch's policy step, one step of its own optimizer on
   * ½·mean (V(s) − target)², over the value head's weights only — a stop-gradient into the shared
   * encoder, so the policy's weights and their optimizer see exactly what they would without it.
   */
  critic?: { optimizer: tf.Optimizer },
): PpoMetrics {
  const B = batch.length;
  const chosen = tf.tensor1d(
    batch.map((s) => s.chosen),
    'int32',
  );
  const oldLp = tf.tensor1d(batch.map((s) => s.oldLogProb));
  let last = 0;
  const size = Math.ceil(B / Math.max(1, cfg.minibatches));
  for (let e = 0; e < cfg.epochs; e++) {
    const order = shuffled(B, rand);
    for (let from = 0; from < B; from += size) {
      const part = order.slice(from, from + size).map((i) => batch[i] as PpoSample);
      const cost = optimizer.minimize(
        () => {
          const { logProbs } = policy.forward(part);
          const lp = chosenLogProbs(
            logProbs,
            part.map((s) => s.chosen),
          );
          const ratio = tf.exp(tf.sub(lp, tf.tensor1d(part.map((s) => s.oldLogProb))));
          const adv = tf.tensor1d(part.map((s) => s.advantage));
          const surrogate = tf.minimum(
            tf.mul(ratio, adv),
            tf.mul(tf.clipByValue(ratio, 1 - cfg.clip, 1 + cfg.clip), adv),
          );
          const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logProbs), logProbs), 1));
          return tf.sub(
            tf.neg(tf.mean(surrogate)),
            tf.mul(cfg.entropyCoef, tf.mean(entropy)),
          ) as tf.Scalar;
        },
        true,
        policy.variables,
      );
      last = (cost as tf.Scalar).dataSync()[0] as number;
      cost?.dispose();
      if (critic) critic.optimizer.minimize(() => valueLoss(policy, part), false, [policy.wv]);
    }
  }
  const metrics = tf.tidy(() => {
    const { logProbs } = policy.forward(batch);
    const lp = chosenLogProbs(logProbs, chosen);
    const ratio = tf.exp(tf.sub(lp, oldLp));
    const clipped = tf.logicalOr(tf.greater(ratio, 1 + cfg.clip), tf.less(ratio, 1 - cfg.clip));
    const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logProbs), logProbs), 1));
    return {
      approxKl: tf.mean(tf.sub(oldLp, lp)).dataSync()[0] as number,
      clipFraction: (tf.sum(tf.cast(clipped, 'float32')).dataSync()[0] as number) / B,
      entropy: tf.mean(entropy).dataSync()[0] as number,
    };
  });
  tf.dispose([chosen, oldLp]);
  if (!critic) return { loss: last, ...metrics };
  const mse = tf.tidy(() => tf.mul(2, valueLoss(policy, batch)).dataSync()[0] as number);
  return { loss: last, ...metrics, valueLoss: mse };
}

/** ½·mean (V(s) − target)² over samples; gradients reach only what the caller's optimizer lists. */
function valueLoss(policy: TextPolicy, samples: PpoSample[]): tf.Scalar {
  const values = policy.values(samples);
  const targets = tf.tensor1d(
    samples.map((s) => {
      if (s.valueTarget === undefined) throw new Error('a critic needs every sample’s valueTarget');
      return s.valueTarget;
    }),
  );
  return tf.mul(0.5, tf.mean(tf.square(tf.sub(values, targets)))) as tf.Scalar;
}

function shuffled(n: number, rand: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}
