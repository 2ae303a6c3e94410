import { CreditlabClient } from '@creditlab/client';
import { textEnvironment, type EpisodeState } from '@creditlab/envs';
import type { TrainerConfig } from './config';
import { iterationRandom, type TrainerHooks } from './iteration';
import type { TextPolicy } from './policy/text-policy';
import { exactEvaluation, sampleGroups, trainingTasks, type TaskGroup } from './rollout';
import {
  runTraining,
  type RolloutSource,
  type RunSink,
  type TrainingResult,
} from './training-loop';

export type { IterationReport, RunStart, TrainerHooks } from './iteration';

/** Where a fork from a checkpoint starts: the checkpoint's bytes and its iteration k (the first one run). */
export interface ResumeFrom {
  iteration: number;
  checkpoint: Uint8Array;
}

/**
 * Trains a policy from fresh rollouts: each iteration samples B tasks × G rollouts with the current
 * policy (the training loop streams them, asks for the run's advantages and updates). From iteration 0,
 * or from a checkpoint's iteration k (a fork).
 */
export async function train(
  config: TrainerConfig,
  hooks: TrainerHooks = {},
  /** The key; default CREDITLAB_API_KEY, else the credentials file (never stored in the run's config). */
  apiKey?: string,
  resume?: ResumeFrom,
): Promise<TrainingResult> {
  return trainOn(CreditlabClient.connect({ url: config.serverUrl, apiKey }), config, hooks, resume);
}

/** `train` against any sink: a Creditlab server's client, or `InProcessRuns`. */
export function trainOn(
  sink: RunSink,
  config: TrainerConfig,
  hooks: TrainerHooks = {},
  resume?: ResumeFrom,
): Promise<TrainingResult> {
  const start = resume?.iteration ?? 0;
  return runTraining(
    sink,
    {
      config,
      run: {
        name: `${config.method} ${config.env} seed ${config.seed}`,
        tags: ['trainer'],
        ...(config.parentRunId ? { parentRunId: config.parentRunId, forkIteration: start } : {}),
      },
      iterations: Array.from(
        { length: Math.max(0, config.iterations - start) },
        (_, i) => start + i,
      ),
      source: sampledRollouts(config),
      checkpoint: resume?.checkpoint,
    },
    hooks,
  );
}

/**
 * Rollouts sampled by the policy being trained: the iteration's B tasks and every action come from its
 * own random stream, a function of (seed, iteration) only, so a fork samples what its parent sampled
 * as long as the weights agree. On environments that allow it, each step carries its exact advantage.
 */
export function sampledRollouts(config: TrainerConfig): RolloutSource {
  const env = textEnvironment(config.env);
  return {
    rollouts: async (iteration: number, policy: TextPolicy): Promise<TaskGroup[]> => {
      const rand = iterationRandom(config.seed, iteration, 'train');
      const tasks = trainingTasks(env, config.tasksPerIteration, rand);
      const truths =
        config.trueAdvantages && env.exact
          ? tasks.map((task) => {
              const truth = exactEvaluation(env, task, policy, config.trueAdvantageGamma);
              return (s: EpisodeState, a: string) => ({ trueAdvantage: truth.advantage(s, a) });
            })
          : undefined;
      const rollouts = sampleGroups(env, tasks, policy, config.groupSize, rand, truths);
      return tasks.map((task, k) => ({
        id: `task-${task.seed}`,
        taskSeed: task.seed,
        trajectories: rollouts[k]!,
      }));
    },
  };
}
