import * as tf from '@tensorflow/tfjs';
import type { TrainerConfig } from './config';
import { DEFAULT_CONFIG } from './config';
import { iterationRandom } from './iteration';
import { decodeCheckpoint, encodeCheckpoint, restoreCheckpoint } from './policy/checkpoint';
import { ppoUpdate, type PpoMetrics, type PpoSample } from './policy/ppo';
import { TextPolicy } from './policy/text-policy';

/**
 * What a run trains: the policy (with its value head), the policy's Adam and the critic's own Adam.
 * The same seed gives the same initial weights.
 */
export class Learner {
  readonly policy: TextPolicy;
  private readonly optimizer: tf.AdamOptimizer;
  private readonly criticOptimizer: tf.AdamOptimizer;

  constructor(private readonly config: TrainerConfig) {
    this.policy = new TextPolicy({ ...config.policy, seed: config.seed });
    this.optimizer = tf.train.adam(config.ppo.learningRate);
    // runs configured before the critic was trained get the default one
    this.criticOptimizer = tf.train.adam((config.critic ?? DEFAULT_CONFIG.critic).learningRate);
  }

  /** PPO on one iteration's batch, its minibatches shuffled by the iteration's own random stream. */
  update(batch: PpoSample[], iteration: number): PpoMetrics {
    const { ppo, seed } = this.config;
    return ppoUpdate(
      this.policy,
      batch,
      { ...ppo, minibatches: ppo.minibatches ?? 1 }, // runs from before minibatches: one
      this.optimizer,
      iterationRandom(seed, iteration, 'update'),
      { optimizer: this.criticOptimizer },
    );
  }

  /** Checkpoint `iteration`: the weights and both optimizers' state after that many iterations. */
  checkpoint(iteration: number): Promise<Uint8Array> {
    return encodeCheckpoint(this.policy, this.optimizer, iteration, this.criticOptimizer);
  }

  restore(bytes: Uint8Array): Promise<void> {
    return restoreCheckpoint(
      decodeCheckpoint(bytes),
      this.policy,
      this.optimizer,
      this.criticOptimizer,
    );
  }

  dispose(): void {
    this.policy.dispose();
    this.optimizer.dispose();
    this.criticOptimizer.dispose();
  }
}
