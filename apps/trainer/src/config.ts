/** Everything a training run depends on; the whole object is stored as the run's `config`. */
export interface TrainerConfig {
  /** Creditlab server base URL. */
  serverUrl: string;
  /** Environment and size: household-tiny|small|medium, sokoban-tiny|small. */
  env: string;
  /** Estimator whose advantages drive the updates (any registry name). */
  method: string;
  /** Its parameters (defaults fill the rest). */
  methodParams: Record<string, unknown>;
  /** Training iterations (each: sample, stream, get advantages, update). */
  iterations: number;
  /** Tasks per iteration (B). */
  tasksPerIteration: number;
  /** Rollouts per task (G). */
  groupSize: number;
  /** Seed of the policy's initial weights and of task and action sampling. */
  seed: number;
  policy: {
    /** Hash buckets for tokens. */
    vocab: number;
    /** Width of the hidden state (also the step `embedding`). */
    hidden: number;
  };
  ppo: {
    /** Clip range ε. */
    clip: number;
    /** Passes over each iteration's batch. */
    epochs: number;
    /** Shuffled minibatches per pass (one gradient step each). */
    minibatches: number;
    learningRate: number;
    /** Weight of the entropy bonus. */
    entropyCoef: number;
  };
  /**
   * The value head, trained beside the policy on ½·(V(s) − G)², G the return-to-go discounted by
   * `gamma`, with its own Adam (`learningRate`) and no gradient into the shared encoder, so the
   * policy learns exactly as it would without it. Its values are the steps' `value` (PPO-GAE's critic).
   */
  critic: { learningRate: number; gamma: number };
  /** Standardise the advantages over each iteration's batch before PPO (a control for their scale). */
  whitenAdvantages: boolean;
  /** Evaluate on held-out tasks every this many iterations (and after the last). */
  evalEvery: number;
  /** Held-out tasks per evaluation: 4 rollouts each, sampled from the policy as in training (not greedy). */
  evalTasks: number;
  /**
   * Upload a checkpoint to the server every this many iterations (and after the last); 0 = never.
   * Checkpoint k holds the weights and optimizer state after k iterations; `--fork RUN --from-checkpoint k`
   * continues from it.
   */
  checkpointEvery: number;
  /** Log each step's exact advantage under the rollout policy (`trueAdvantage`), tiny tasks only; γ of that truth. */
  trueAdvantages: boolean;
  trueAdvantageGamma: number;
  /** Set on a fork: the run this one replays under another method (same config and seed). */
  parentRunId?: string;
}

export const DEFAULT_CONFIG: TrainerConfig = {
  serverUrl: 'http://127.0.0.1:4000',
  env: 'household-tiny',
  method: 'gigpo',
  methodParams: {},
  iterations: 30,
  tasksPerIteration: 8,
  groupSize: 8,
  seed: 1,
  policy: { vocab: 1024, hidden: 32 },
  ppo: { clip: 0.2, epochs: 4, minibatches: 4, learningRate: 0.01, entropyCoef: 0.01 },
  critic: { learningRate: 0.01, gamma: 0.95 },
  whitenAdvantages: false,
  evalEvery: 5,
  evalTasks: 16,
  checkpointEvery: 10,
  trueAdvantages: true,
  trueAdvantageGamma: 0.95,
};
