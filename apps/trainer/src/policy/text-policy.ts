import * as tf from '@tensorflow/tfjs';
import { bagMatrix } from './tokens';

export interface PolicyConfig {
  /** Hash buckets for tokens. */
  vocab: number;
  /** Width of the state and action representations (and of the `embedding` sent with each step). */
  hidden: number;
  seed: number;
}

/** One decision: the observation, the admissible actions, and (after sampling) the choice. */
export interface Decision {
  observation: string;
  actions: string[];
}

export interface Scored {
  /** log π(a|s) for every admissible action, in order. */
  logProbs: number[];
  /** The state's hidden vector h(s) (BiPACE clusters on it). */
  hidden: number[];
  value: number;
}

/**
 * A small policy over admissible actions, chosen for this machine (no GPU,
 * ~18 GFLOP/s with wasm): a bag-of-tokens encoder rather than a transformer,
 * because text-game states are short and mostly identified by their words, and
 * it trains in seconds. Shapes: observation bags [B, V] · E [V, d] → tanh(· W + b)
 * = h [B, d]; action bags [C, V] · E [V, d] · U [d, d] = a [C, d]; logit = h·a;
 * value = h · w_v.
 */
/** The log-probability of each decision's chosen action ([B]), from forward's padded [B, maxA] table. */
export function chosenLogProbs(logProbs: tf.Tensor2D, chosen: number[] | tf.Tensor1D): tf.Tensor1D {
  const indices = Array.isArray(chosen) ? tf.tensor1d(chosen, 'int32') : chosen;
  return tf.sum(tf.mul(logProbs, tf.oneHot(indices, logProbs.shape[1])), 1) as tf.Tensor1D;
}

export class TextPolicy {
  readonly E: tf.Variable;
  readonly W: tf.Variable;
  readonly b: tf.Variable;
  readonly U: tf.Variable;
  readonly wv: tf.Variable;

  constructor(readonly config: PolicyConfig) {
    const { vocab, hidden, seed } = config;
    this.E = tf.variable(tf.randomNormal([vocab, hidden], 0, 0.3, 'float32', seed));
    // W and U start near the identity: an action then scores by the words it shares with the observation
    // (the task's object and receptacle), a useful prior in text games that training refines.
    const nearIdentity = (s: number) =>
      tf.add(
        tf.eye(hidden),
        tf.randomNormal([hidden, hidden], 0, 0.1 / Math.sqrt(hidden), 'float32', s),
      );
    this.W = tf.variable(nearIdentity(seed + 1));
    this.b = tf.variable(tf.zeros([hidden]));
    this.U = tf.variable(nearIdentity(seed + 2));
    this.wv = tf.variable(tf.zeros([hidden, 1]));
  }

  get variables(): tf.Variable[] {
    return [this.E, this.W, this.b, this.U, this.wv];
  }

  /**
   * Log-probabilities of each decision's actions, padded: [B, maxA] with -1e9 where a decision has fewer
   * actions; plus h [B, d] and values [B]. Call inside tf.tidy or dispose the results.
   */
  forward(decisions: Decision[]): {
    logProbs: tf.Tensor2D;
    hidden: tf.Tensor2D;
    values: tf.Tensor1D;
  } {
    const B = decisions.length;
    const maxA = Math.max(...decisions.map((d) => d.actions.length));
    const h = this.encode(decisions);
    // Action slots padded to maxA per decision (masked below). Each distinct action text is embedded
    // once and copied to its slots by a one-hot matrix product (a padding slot's row is zero): a
    // batch has a few dozen distinct actions for thousands of slots, and a matMul's gradient is
    // cheap where a gather's is missing from the wasm backend.
    const slots: string[] = [];
    const mask: number[] = [];
    for (const d of decisions) {
      for (let j = 0; j < maxA; j++) {
        slots.push(d.actions[j] ?? '');
        mask.push(j < d.actions.length ? 0 : -1e9);
      }
    }
    const acts = tf.matMul(this.distinct(slots), tf.matMul(this.bags(slots), this.U));
    const padded = tf.reshape(acts, [B, maxA, this.config.hidden]);
    const logits = tf.add(
      tf.sum(tf.mul(padded, tf.expandDims(h, 1)), 2),
      tf.tensor2d(mask, [B, maxA]),
    );
    const logProbs = tf.logSoftmax(logits) as tf.Tensor2D;
    const values = tf.squeeze(tf.matMul(h, this.wv), [1]) as tf.Tensor1D;
    return { logProbs, hidden: h, values };
  }

  /** The value head alone: V(s) = h(s)·w_v [B], without the actions' scores. */
  values(decisions: Pick<Decision, 'observation'>[]): tf.Tensor1D {
    return tf.squeeze(tf.matMul(this.encode(decisions), this.wv), [1]) as tf.Tensor1D;
  }

  /** The shared encoder: observation bags [B, V] · E · W + b, through tanh: h [B, d] (once per distinct text). */
  private encode(decisions: Pick<Decision, 'observation'>[]): tf.Tensor2D {
    const texts = decisions.map((d) => d.observation);
    const h = tf.tanh(tf.add(tf.matMul(this.bags(texts), this.W), this.b));
    return tf.matMul(this.distinct(texts), h);
  }

  /** The distinct non-empty texts' bags times E: [distinct, d], in order of first appearance. */
  private bags(texts: string[]): tf.Tensor2D {
    const { vocab } = this.config;
    const distinct = [...new Set(texts.filter((t) => t !== ''))];
    const bag = tf.tensor2d(bagMatrix(distinct, vocab), [distinct.length, vocab]);
    return tf.matMul(bag, this.E);
  }

  /** One-hot rows [texts, distinct] picking each text's row of `bags(texts)`; zero for the empty text. */
  private distinct(texts: string[]): tf.Tensor2D {
    const index = new Map<string, number>();
    for (const t of texts) if (t !== '' && !index.has(t)) index.set(t, index.size);
    const onehot = new Float32Array(texts.length * index.size);
    texts.forEach((t, i) => {
      const j = index.get(t);
      if (j !== undefined) onehot[i * index.size + j] = 1;
    });
    return tf.tensor2d(onehot, [texts.length, index.size]);
  }

  /** Scores decisions without gradients: what the rollout records. */
  score(decisions: Decision[]): Scored[] {
    return tf.tidy(() => {
      const { logProbs, hidden, values } = this.forward(decisions);
      const lp = logProbs.arraySync();
      const h = hidden.arraySync();
      const v = values.arraySync();
      return decisions.map((d, i) => ({
        logProbs: (lp[i] as number[]).slice(0, d.actions.length),
        hidden: h[i] as number[],
        value: v[i] as number,
      }));
    });
  }

  dispose(): void {
    for (const v of this.variables) v.dispose();
  }
}
