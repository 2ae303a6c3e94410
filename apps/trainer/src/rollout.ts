import { ExactEvaluation, type EpisodeState, type TextEnvironment } from '@creditlab/envs';
import type { TextPolicy } from './policy/text-policy';

/**
 * A step as the trainer streams it: the rollout-batch/v1 fields, plus extras the server keeps as the
 * step's `extra` — the task it was taken in (`taskSeed`, which a retrain replays it in) and, on the
 * tiny tasks, its exact advantage under the rollout policy (`trueAdvantage`).
 */
export interface StepRecord {
  state: string;
  action: string;
  reward: number;
  nll?: number;
  tokenLogprobs?: number[];
  embedding?: number[];
  value?: number;
  taskSeed?: number;
  trueAdvantage?: number;
  /** The exact V(s) of the latent state, and the variance of Q(s, ·) under the policy (the quality harness). */
  trueValue?: number;
  trueQVariance?: number;
}

/** What the truth adds to a step's record, from the latent state and the action taken. */
export type TruthAnnotation<S> = (state: S, action: string) => Partial<StepRecord>;

/** One step of a rollout: what is streamed, and what PPO needs of it. */
export interface RolloutStep {
  record: StepRecord;
  /** The admissible actions, the index taken and its log-probability under the rollout policy. */
  actions: string[];
  chosen: number;
  logProb: number;
}

export interface RolloutTrajectory {
  id: string;
  outcome: 'success' | 'failure' | 'truncated';
  steps: RolloutStep[];
}

/** The G rollouts of one task. */
export interface TaskGroup {
  id: string;
  taskSeed: number;
  trajectories: RolloutTrajectory[];
}

/**
 * G rollouts of each task, sampled from the current policy. All rollouts advance in lock step, so
 * each time step is one batched forward pass over every rollout still running (the per-call cost of
 * TensorFlow.js dominates at these sizes). Random draws are taken in rollout order (task, then
 * rollout) at each time step. With `truths` (one per task), every step also records what the truth
 * says about it (its exact advantage).
 */
export function sampleGroups<T extends { seed: number }, S extends EpisodeState>(
  env: TextEnvironment<T, S>,
  tasks: T[],
  policy: TextPolicy,
  groupSize: number,
  rand: () => number,
  truths?: TruthAnnotation<S>[],
): RolloutTrajectory[][] {
  const slots = tasks.flatMap((task, k) =>
    Array.from({ length: groupSize }, (_, i) => ({
      task,
      truth: truths?.[k],
      state: env.initialState(task),
      trajectory: {
        id: `task-${task.seed}/${i}`,
        outcome: 'truncated',
        steps: [],
      } as RolloutTrajectory,
    })),
  );
  for (;;) {
    const live = slots.filter((x) => !x.state.done);
    if (live.length === 0) break;
    const decisions = live.map((x) => ({
      observation: env.observe(x.task, x.state),
      actions: env.admissibleActions(x.task, x.state),
    }));
    const scored = policy.score(decisions);
    live.forEach((x, k) => {
      const { observation, actions } = decisions[k]!;
      const { logProbs, hidden, value } = scored[k]!;
      const chosen = sample(logProbs, rand);
      const lp = logProbs[chosen] as number;
      const action = actions[chosen] as string;
      const result = env.step(x.task, x.state, action, rand);
      const record: StepRecord = {
        state: observation,
        action,
        reward: result.reward,
        nll: -lp,
        tokenLogprobs: [lp],
        embedding: hidden,
        value,
        taskSeed: x.task.seed,
        ...(x.truth ? x.truth(x.state, action) : {}),
      };
      x.trajectory.steps.push({ record, actions, chosen, logProb: lp });
      x.state = result.state;
      if (result.state.done)
        x.trajectory.outcome = result.state.done === 'success' ? 'success' : 'truncated';
    });
  }
  return tasks.map((_, k) =>
    slots.slice(k * groupSize, (k + 1) * groupSize).map((x) => x.trajectory),
  );
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

function sample(logProbs: number[], rand: () => number): number {
  let u = rand();
  for (let i = 0; i < logProbs.length; i++) {
    u -= Math.exp(logProbs[i] as number);
    if (u <= 0) return i;
  }
  return logProbs.length - 1;
}

/** Success rate and mean return of a batch of rollouts. */
export function rolloutStats(groups: TaskGroup[]): { successRate: number; meanReturn: number } {
  const trajectories = groups.flatMap((g) => g.trajectories);
  const n = trajectories.length || 1;
  const successes = trajectories.filter((t) => t.outcome === 'success').length;
  const total = trajectories.reduce(
    (a, t) => a + t.steps.reduce((b, st) => b + st.record.reward, 0),
    0,
  );
  return { successRate: successes / n, meanReturn: total / n };
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
