import type { EpisodeState, TextEnvironment } from './text-environment';

/** A stochastic policy over the admissible actions of a state (probabilities in the same order). */
export type EnvPolicy<T, S> = (task: T, state: S, actions: string[]) => number[];

/**
 * The exact value of a policy on a (tiny) task, by backward induction over the graph of states
 * reachable before the step cap: V(s) = Σ_a π(a|s)·Q(s,a), Q(s,a) = Σ_s' P(s'|s,a)·(r + γ·V(s')),
 * with V = 0 at the end of an episode (success or the cap). States carry their step count, so the
 * cap's time dependence is exact, and each (situation, step) is valued once: the cost is the number
 * of such states, not of paths. The states are the environment's latent states: where the policy acts
 * on an observation that does not reveal the state, π(a|s) is the policy at the observation the state
 * shows, and the advantage is the latent state's.
 */
export class ExactEvaluation<T extends { seed: number }, S extends EpisodeState> {
  private readonly values = new Map<string, number>();

  constructor(
    private readonly env: TextEnvironment<T, S>,
    private readonly task: T,
    private readonly policy: EnvPolicy<T, S>,
    private readonly gamma = 1,
  ) {}

  value(s: S): number {
    if (s.done) return 0;
    const key = `${this.env.situationKey(s)}@${s.step}`;
    const known = this.values.get(key);
    if (known !== undefined) return known;
    const actions = this.env.admissibleActions(this.task, s);
    const probs = this.policy(this.task, s, actions);
    let v = 0;
    actions.forEach((a, i) => {
      const p = probs[i] as number;
      if (p > 0) v += p * this.q(s, a);
    });
    this.values.set(key, v);
    return v;
  }

  /** Q(s, a) for any action text, admissible or not. */
  q(s: S, action: string): number {
    const outcomes = this.env.outcomes?.(this.task, s, action) ?? [
      { p: 1, step: this.env.step(this.task, s, action) },
    ];
    let q = 0;
    for (const { p, step } of outcomes)
      q += p * (step.reward + this.gamma * this.value(step.state));
    return q;
  }

  /** The variance of Q(s, a) over the policy's actions: Σ_a π(a|s)·(Q(s,a) − V(s))². */
  qVariance(s: S): number {
    if (s.done) return 0;
    const actions = this.env.admissibleActions(this.task, s);
    const probs = this.policy(this.task, s, actions);
    const v = this.value(s);
    return actions.reduce((acc, a, i) => acc + (probs[i] as number) * (this.q(s, a) - v) ** 2, 0);
  }

  /** The true advantage of taking `action` in `s`: Q(s,a) − V(s). */
  advantage(s: S, action: string): number {
    return this.q(s, action) - this.value(s);
  }

  get statesEvaluated(): number {
    return this.values.size;
  }
}

/** A shortest successful action sequence (breadth-first over situations), or null if none fits in the cap. */
export function shortestSolutionOf<T extends { seed: number }, S extends EpisodeState>(
  env: TextEnvironment<T, S>,
  task: T,
): string[] | null {
  const start = env.initialState(task);
  const seen = new Set([env.situationKey(start)]);
  let frontier: { state: S; path: string[] }[] = [{ state: start, path: [] }];
  while (frontier.length) {
    const next: typeof frontier = [];
    for (const { state, path } of frontier) {
      for (const a of env.admissibleActions(task, state)) {
        const r = env.step(task, state, a);
        if (r.state.done === 'success') return [...path, a];
        const key = env.situationKey(r.state);
        if (r.state.done || seen.has(key)) continue;
        seen.add(key);
        next.push({ state: r.state, path: [...path, a] });
      }
    }
    frontier = next;
  }
  return null;
}
