/**
 * The `rollout-batch/v1` interchange format (docs/rollout-batch.md), as
 * plain JSON types. These describe input *after* validation; raw input is
 * `unknown` until `columnarBatchFromJson` accepts it.
 */
export const ROLLOUT_BATCH_FORMAT = 'rollout-batch/v1';

export type Outcome = 'success' | 'failure' | 'truncated';

/**
 * A trajectory's outcome (docs/estimators.md §1.2): the one given, else `success` when its
 * undiscounted return is greater than 0 and `failure` otherwise. The builder applies it; a
 * store that keeps outcomes applies the same function so that it keeps what the estimators see.
 */
export function resolveOutcome(given: Outcome | undefined, episodeReturn: number): Outcome {
  return given ?? (episodeReturn > 0 ? 'success' : 'failure');
}

export interface RolloutStep {
  state: string;
  action: string;
  reward: number;
  nll?: number;
  tokenLogprobs?: number[];
  embedding?: number[];
  value?: number;
  nextState?: string;
  nextValue?: number;
}

export interface RolloutTrajectory {
  id: string;
  outcome?: Outcome;
  steps: RolloutStep[];
}

export interface RolloutGroup {
  id: string;
  trajectories: RolloutTrajectory[];
}

export interface RolloutBatch {
  format: typeof ROLLOUT_BATCH_FORMAT;
  groups: RolloutGroup[];
}
