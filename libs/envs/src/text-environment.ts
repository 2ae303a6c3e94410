/** What every environment state says about its episode. */
export interface EpisodeState {
  readonly step: number;
  readonly done: null | 'success' | 'truncated';
}

export interface EnvStep<S> {
  state: S;
  reward: number;
  /** Whether the action was admissible; an inadmissible one costs the environment's penalty and changes nothing. */
  valid: boolean;
}

/**
 * A text environment as the trainer and the exact evaluator see it: tasks from seeds, deterministic
 * dynamics over immutable states, anchor observations (the same situation reads the same in every
 * rollout of a group), and the admissible actions of a state.
 */
export interface TextEnvironment<
  T extends { seed: number } = { seed: number },
  S extends EpisodeState = EpisodeState,
> {
  /** e.g. "household-tiny", "sokoban-tiny". */
  readonly name: string;
  /** Whether exact evaluation of a policy is feasible (every state reachable before the cap can be visited). */
  readonly exact: boolean;
  task(seed: number): T;
  /** Held-out evaluation seeds; training never samples them. */
  isEvaluationSeed(seed: number): boolean;
  initialState(task: T): S;
  admissibleActions(task: T, s: S): string[];
  observe(task: T, s: S): string;
  step(task: T, s: S, action: string): EnvStep<S>;
  /** A key for the situation of `s` without its step counter. */
  situationKey(s: S): string;
}
