/** What every environment state says about its episode. */
export interface EpisodeState {
  readonly step: number;
  readonly done: null | 'success' | 'truncated';
}

export interface EnvStep<S> {
  state: S;
  reward: number;
  /** Whether the action was valid; an invalid one costs the environment's penalty and changes nothing but the step. */
  valid: boolean;
}

/** One possible result of an action, with its probability. */
export interface EnvOutcome<S> {
  p: number;
  step: EnvStep<S>;
}

/**
 * A text environment as the trainer and the exact evaluator see it: tasks from seeds, dynamics over
 * immutable states, observations that are functions of the state, and the actions offered in a state.
 * Deterministic environments ignore `rand`; a stochastic one describes every outcome (`outcomes`) and
 * draws one with `rand` in `step`.
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
  step(task: T, s: S, action: string, rand?: () => number): EnvStep<S>;
  /** Every outcome of `action` in `s` with its probability; absent for a deterministic environment. */
  outcomes?(task: T, s: S, action: string): EnvOutcome<S>[];
  /** A key for the situation of `s` without its step counter. */
  situationKey(s: S): string;
}
