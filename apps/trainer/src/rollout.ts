import { ExactEvaluation, type EpisodeState, type TextEnvironment } from '@creditlab/envs';
import type { TextPolicy } from './policy/text-policy';

export interface SampledStep {
  state: string;
  action: string;
  reward: number;
  nll: number;
  tokenLogprobs: number[];
  embedding: number[];
  value: number;
  /** For PPO: the admissible actions, the index taken and its log-probability under the rollout policy. */
  actions: string[];
  chosen: number;
  logProb: number;
  /** Exact Q(s,a) − V(s) under the rollout policy (tiny tasks), sent as an extra step field. */
  trueAdvantage?: number;
}

export interface SampledTrajectory {
  id: string;
  outcome: 'success' | 'failure' | 'truncated';
  steps: SampledStep[];
}

/**
 * G rollouts of one task with the current policy, advanced in lock step so each
 * time step is one batched forward pass over the rollouts still running.
 * `greedy` takes the most likely action (evaluation) instead of sampling.
 */
export function sampleGroup<T extends { seed: number }, S extends EpisodeState>(
  env: TextEnvironment<T, S>,
  task: T,
  policy: TextPolicy,
  groupSize: number,
  rand: () => number,
  greedy = false,
  truth?: ExactEvaluation<T, S>,
): SampledTrajectory[] {
  const states: S[] = Array.from({ length: groupSize }, () => env.initialState(task));
  const trajectories: SampledTrajectory[] = states.map((_, i) => ({
    id: `task-${task.seed}/${i}`,
    outcome: 'truncated',
    steps: [],
  }));
  for (;;) {
    const live = states.map((s, i) => (s.done ? -1 : i)).filter((i) => i >= 0);
    if (live.length === 0) break;
    const decisions = live.map((i) => ({
      observation: env.observe(task, states[i]!),
      actions: env.admissibleActions(task, states[i]!),
    }));
    const scored = policy.score(decisions);
    live.forEach((i, k) => {
      const { observation, actions } = decisions[k]!;
      const { logProbs, hidden, value } = scored[k]!;
      const chosen = greedy ? argmax(logProbs) : sample(logProbs, rand);
      const lp = logProbs[chosen] as number;
      const result = env.step(task, states[i]!, actions[chosen] as string);
      trajectories[i]!.steps.push({
        state: observation,
        action: actions[chosen] as string,
        reward: result.reward,
        nll: -lp,
        tokenLogprobs: [lp],
        embedding: hidden,
        value,
        actions,
        chosen,
        logProb: lp,
        ...(truth ? { trueAdvantage: truth.advantage(states[i]!, actions[chosen] as string) } : {}),
      });
      states[i] = result.state;
      if (result.state.done)
        trajectories[i]!.outcome = result.state.done === 'success' ? 'success' : 'truncated';
    });
  }
  return trajectories;
}

/** The tasks of one iteration: B training seeds drawn from the iteration's random stream. */
export function trainingTasks<T extends { seed: number }>(
  env: TextEnvironment<T, EpisodeState>,
  count: number,
  rand: () => number,
): T[] {
  const tasks: T[] = [];
  while (tasks.length < count) {
    const seed = 1 + Math.floor(rand() * 100_000);
    if (!env.isEvaluationSeed(seed)) tasks.push(env.task(seed));
  }
  return tasks;
}

/** The first `count` held-out seeds: the same evaluation tasks for every run of an environment. */
export function evaluationTasks<T extends { seed: number }>(
  env: TextEnvironment<T, EpisodeState>,
  count: number,
): T[] {
  const tasks: T[] = [];
  for (let seed = 1; tasks.length < count; seed++)
    if (env.isEvaluationSeed(seed)) tasks.push(env.task(seed));
  return tasks;
}

function argmax(xs: number[]): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if ((xs[i] as number) > (xs[best] as number)) best = i;
  return best;
}

function sample(logProbs: number[], rand: () => number): number {
  let u = rand();
  for (let i = 0; i < logProbs.length; i++) {
    u -= Math.exp(logProbs[i] as number);
    if (u <= 0) return i;
  }
  return logProbs.length - 1;
}

/**
 * The exact evaluation of the current policy on a task (tiny sizes only: it visits every reachable
 * state before the cap). The policy's probabilities are computed once per distinct decision.
 */
export function exactEvaluation<T extends { seed: number }, S extends EpisodeState>(
  env: TextEnvironment<T, S>,
  task: T,
  policy: TextPolicy,
  gamma: number,
): ExactEvaluation<T, S> {
  const cache = new Map<string, number[]>();
  const pi = (t: T, s: S, actions: string[]) => {
    const observation = env.observe(t, s);
    const key = `${observation}\u0000${actions.join('\u0001')}`;
    let probs = cache.get(key);
    if (!probs) {
      probs = policy.score([{ observation, actions }])[0]!.logProbs.map(Math.exp);
      cache.set(key, probs);
    }
    return probs;
  };
  return new ExactEvaluation(env, task, pi, gamma);
}
