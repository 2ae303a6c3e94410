import { seededRandom, textEnvironment, type EpisodeState } from '@creditlab/envs';
import { createHash } from 'node:crypto';
import type { TextPolicy } from '../policy/text-policy';
import { exactEvaluation, sampleGroups, trainingTasks, type RolloutTrajectory } from '../rollout';

/**
 * One draw of the harness's design, per task: the task's fixed target trajectory followed by G − 1
 * companions sampled afresh for this draw. The K draws of a task share the target, so each target
 * step gets K estimates against one exact value (bias and variance per step); every draw is also an
 * ordinary group of G rollouts of the snapshot (the per-group figures).
 */
export interface TaskDraws {
  taskSeed: number;
  target: RolloutTrajectory;
  /** companions[k]: the G − 1 companions of draw k. */
  companions: RolloutTrajectory[][];
}

/** A deterministic stream per (env, snapshot, G, purpose). */
export function streamFor(...parts: (string | number)[]): () => number {
  return seededRandom(createHash('sha256').update(parts.join('/')).digest().readUInt32LE(0));
}

/**
 * Samples the draws of `tasks` training tasks for a snapshot's policy, with every step's exact
 * advantage, exact V and variance of Q under the policy (γ).
 */
export function sampleDraws(
  envName: string,
  policy: TextPolicy,
  tasks: number,
  groupSize: number,
  draws: number,
  gamma: number,
  rand: () => number,
): TaskDraws[] {
  const env = textEnvironment(envName);
  const chosen = trainingTasks(env, tasks, rand);
  const truths = chosen.map((task) => {
    const ev = exactEvaluation(env, task, policy, gamma);
    return (s: EpisodeState, a: string) => ({
      trueAdvantage: ev.advantage(s, a),
      trueValue: ev.value(s),
      trueQVariance: ev.qVariance(s),
    });
  });
  const targets = sampleGroups(env, chosen, policy, 1, rand, truths).map((g) => g[0]!);
  const companions = Array.from({ length: draws }, () =>
    groupSize > 1
      ? sampleGroups(env, chosen, policy, groupSize - 1, rand, truths)
      : chosen.map(() => []),
  );
  return chosen.map((task, i) => ({
    taskSeed: task.seed,
    target: { ...targets[i]!, id: `task-${task.seed}/target` },
    companions: companions.map((c) => c[i]!),
  }));
}
