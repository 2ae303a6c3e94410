import {
  CONNECTION_FLAGS,
  integerFlag,
  refuseWith,
  UsageError,
  type Command,
  type Flag,
  type FlagValues,
} from '@creditlab/cli';
import { ENVIRONMENT_FLAGS, environmentFlag, methodParams } from './trainer-flags';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';

const D = DEFAULT_CONFIG;

const TRAIN_FLAGS = {
  ...ENVIRONMENT_FLAGS,
  method: {
    type: 'string',
    value: 'M',
    help: 'estimator whose advantages drive the updates (npm run -s estimate -- --list)',
    byDefault: D.method,
  },
  param: {
    type: 'string',
    multiple: true,
    value: 'k=v',
    help: 'a parameter of --method; repeat for several',
    byDefault: "the method's defaults",
  },
  iterations: {
    type: 'string',
    value: 'N',
    help: 'training iterations',
    byDefault: `${D.iterations}; with --fork or --retrain, the parent's`,
  },
  seed: {
    type: 'string',
    value: 'S',
    help: 'seed of the initial weights and of task and action sampling',
    byDefault: String(D.seed),
  },
  'checkpoint-every': {
    type: 'string',
    value: 'K',
    help: 'upload a checkpoint every K iterations and after the last (0: never)',
    byDefault: `${D.checkpointEvery}; with --fork, the parent's`,
  },
  fork: {
    type: 'string',
    value: 'RUN',
    help: "new run from RUN's config and seed under --method, linked to RUN",
    byDefault: 'a new run of its own',
  },
  'from-checkpoint': {
    type: 'string',
    value: 'K',
    help: "with --fork: start from RUN's weights after K iterations (its checkpoint K)",
    byDefault: '0, from scratch',
  },
  retrain: {
    type: 'string',
    value: 'RUN',
    help: "RUN's updates again on its stored rollouts under --method, in a new linked run",
    byDefault: 'a new run of its own',
  },
  ...CONNECTION_FLAGS,
} as const satisfies Record<string, Flag>;

export const TRAIN_COMMAND: Command<typeof TRAIN_FLAGS> = {
  invocation: 'npm run train --',
  name: 'train',
  synopsis: [
    '[--env E] [--method M] [--param k=v ...] [--iterations N] [--tasks B] [--group-size G] [--seed S] [--checkpoint-every K]',
    '--fork RUN [--from-checkpoint K] [--method M] [--param k=v ...] [--iterations N] [--checkpoint-every K]',
    '--retrain RUN [--method M] [--param k=v ...] [--iterations N]',
  ],
  summary:
    'Trains a policy in a text environment against a Creditlab server: each iteration samples B tasks × G rollouts, streams them, asks the server for the advantages of --method and runs PPO on them. --fork starts a new run from another run’s config and seed (from scratch, or from its checkpoint K); --retrain repeats another run’s updates on its stored rollouts. Prints the new run’s id on stdout, progress on stderr; Ctrl-C finishes the run as aborted.',
  flags: TRAIN_FLAGS,
  examples: [
    'npm run train -- --env household-tiny --method gigpo --iterations 30 --seed 1',
    'npm run train -- --env sokoban-tiny --iterations 10 --checkpoint-every 5',
    'npm run train -- --fork RUN_ID --from-checkpoint 5 --method gaca',
    'npm run train -- --retrain RUN_ID --method gagpo',
  ],
  notes:
    'exit status: 0 done, 1 failed (the run is marked failed), 2 bad usage (nothing created), 130 stopped by Ctrl-C (the run is marked aborted)',
};

export type TrainPlan =
  | { mode: 'train'; config: TrainerConfig }
  | {
      mode: 'fork';
      parent: string;
      method: string;
      params: Record<string, unknown>;
      fromCheckpoint: number;
      overrides: Partial<Pick<TrainerConfig, 'iterations' | 'checkpointEvery'>>;
    }
  | {
      mode: 'retrain';
      parent: string;
      method: string;
      params: Record<string, unknown>;
      iterations?: number;
    };

/** What the flags ask for, every value checked (UsageError otherwise); nothing is contacted yet. */
export function trainPlan(values: FlagValues<typeof TRAIN_FLAGS>, serverUrl: string): TrainPlan {
  const method = values.method ?? D.method;
  const params = methodParams(method, values.param ?? [], { method: '--method', param: '--param' });
  const iterations = integerFlag('iterations', values.iterations, 1);
  const checkpointEvery = integerFlag('checkpoint-every', values['checkpoint-every'], 0);
  const inherited = ['env', 'tasks', 'group-size', 'seed'];
  if (values.fork !== undefined) {
    refuseWith('fork', values, ['retrain', ...inherited], "a fork keeps its parent's config");
    return {
      mode: 'fork',
      parent: values.fork,
      method,
      params,
      fromCheckpoint: integerFlag('from-checkpoint', values['from-checkpoint'], 0) ?? 0,
      overrides: {
        ...(iterations === undefined ? {} : { iterations }),
        ...(checkpointEvery === undefined ? {} : { checkpointEvery }),
      },
    };
  }
  if (values.retrain !== undefined) {
    const why = "a retrain replays its parent's rollouts and uploads no checkpoints";
    refuseWith('retrain', values, [...inherited, 'from-checkpoint', 'checkpoint-every'], why);
    return { mode: 'retrain', parent: values.retrain, method, params, iterations };
  }
  if (values['from-checkpoint'] !== undefined)
    throw new UsageError(
      '--from-checkpoint needs --fork RUN (the run whose checkpoint to start from)',
    );
  const env = environmentFlag(values.env);
  return {
    mode: 'train',
    config: {
      ...D,
      serverUrl,
      env,
      method,
      methodParams: params,
      iterations: iterations ?? D.iterations,
      tasksPerIteration: integerFlag('tasks', values.tasks, 1) ?? D.tasksPerIteration,
      groupSize: integerFlag('group-size', values['group-size'], 1) ?? D.groupSize,
      seed: integerFlag('seed', values.seed, 0) ?? D.seed,
      checkpointEvery: checkpointEvery ?? D.checkpointEvery,
    },
  };
}
