import {
  CONNECTION_FLAGS,
  integerFlag,
  UsageError,
  type Command,
  type Flag,
  type FlagValues,
} from '@creditlab/cli';
import path from 'node:path';
import { ENVIRONMENT_FLAGS, environmentFlag, methodArm } from './trainer-flags';
import { DEFAULT_CONFIG } from './config';
import { docsFolder } from './docs-folder';

const ALL_METHODS = 'grpo,gigpo,gaca,gated-bepo,gagpo,bipace,ppo-gae';
const D = DEFAULT_CONFIG;

const EXPERIMENT_FLAGS = {
  ...ENVIRONMENT_FLAGS,
  methods: {
    type: 'string',
    value: 'M,M,...',
    help: 'estimators to compare, each at its defaults; METHOD@key=value[@key=value] adds an arm of that method with those parameters (compared with GRPO and with the method at its defaults, in a family of its own)',
    byDefault: ALL_METHODS,
  },
  seeds: { type: 'string', value: 'N', help: 'paired seeds 1..N per method', byDefault: '10' },
  'eval-tasks': {
    type: 'string',
    value: 'N',
    help: 'held-out tasks per evaluation (4 rollouts each)',
    byDefault: '64',
  },
  'whiten-methods': {
    type: 'string',
    value: 'M,M,...',
    help: 'control arm: these methods again on per-batch whitened advantages ("best": the step-level method with the largest mean held-out area)',
    byDefault: 'none',
  },
  'report-only': {
    type: 'boolean',
    help: 'train nothing: write experiments.md from the runs the data file holds (e.g. of an experiment stopped early); give the methods, seeds and arms the runs were made with',
    byDefault: 'off',
  },
  'truth-only': {
    type: 'boolean',
    help: 'only the truth run, again (its scores replace those the data file holds), and only the truth table of the section in experiments.md',
    byDefault: 'off',
  },
  'in-process': {
    type: 'boolean',
    help: 'train in this process, the advantages from the estimator library as the server computes them (no server)',
    byDefault: 'on a Creditlab server',
  },
  data: {
    type: 'string',
    value: 'FILE',
    help: 'where finished runs are kept; a re-run skips them (resumes)',
    byDefault: '<out>/data/experiments-<env>.json',
  },
  iterations: {
    type: 'string',
    value: 'N',
    help: 'training iterations per run',
    byDefault: String(D.iterations),
  },
  'truth-iterations': {
    type: 'string',
    value: 'N',
    help: 'iterations of the GRPO run whose exact advantages score every method (0: none)',
    byDefault: '10',
  },
  out: {
    type: 'string',
    value: 'DIR',
    help: 'folder of experiments.md (its section for --env is replaced) and the learning-curve PNG',
    byDefault: 'docs/',
  },
  server: {
    ...CONNECTION_FLAGS.server,
    help: 'train on this Creditlab server',
    byDefault:
      'CREDITLAB_URL, else the server of the credentials file (start one with `npm start`)',
  },
  key: {
    ...CONNECTION_FLAGS.key,
    help: 'API key for --server (write role)',
    byDefault: CONNECTION_FLAGS.key.byDefault,
  },
} as const satisfies Record<string, Flag>;

export const EXPERIMENT_COMMAND: Command<typeof EXPERIMENT_FLAGS> = {
  invocation: 'npm run experiment --',
  name: 'experiment',
  synopsis: [
    '[--env E] [--methods M,M,...] [--seeds N] [--iterations N] [--whiten-methods M,...] [--out DIR] [options]',
  ],
  summary:
    'Trains every method with paired seeds (the same seed: the same initial weights and the same first tasks), optionally a control arm on whitened advantages, scores the methods against the exact advantages of a GRPO run, and writes experiments.md with paired t-tests (Holm-adjusted) on the area under the held-out curve, and a learning-curve PNG. Finished runs are kept in the data file: a re-run resumes.',
  flags: EXPERIMENT_FLAGS,
  examples: [
    'npm run experiment -- --env household-tiny --seeds 10 --whiten-methods grpo,gigpo,best',
    'npm run experiment -- --env sokoban-tiny --methods grpo,gigpo --seeds 1 --iterations 5 --out /tmp/trial',
  ],
  notes:
    'exit status: 0 done, 1 a run failed (it is marked failed), 2 bad usage, 130 stopped by Ctrl-C (the run is marked aborted, no report is written)',
};

export interface ExperimentPlan {
  env: string;
  methods: string[];
  seeds: number;
  iterations: number;
  tasksPerIteration: number;
  groupSize: number;
  truthIterations: number;
  evalTasks: number;
  whitenMethods: string[];
  outDir: string;
  dataFile: string;
  inProcess: boolean;
  reportOnly: boolean;
  truthOnly: boolean;
  /** The server to use; absent: CREDITLAB_URL / CREDITLAB_API_KEY, else the credentials file. */
  server?: { url?: string; apiKey?: string };
}

/** What the flags ask for, every value checked (UsageError otherwise). */
export function experimentPlan(values: FlagValues<typeof EXPERIMENT_FLAGS>): ExperimentPlan {
  const env = environmentFlag(values.env);
  const methods = (values.methods ?? ALL_METHODS).split(',');
  for (const m of methods) methodArm(m, '--methods');
  const whitenMethods = values['whiten-methods'] ? values['whiten-methods'].split(',') : [];
  for (const m of whitenMethods.filter((x) => x !== 'best')) methodArm(m, '--whiten-methods');
  const outDir = path.resolve(values.out ?? docsFolder());
  const truthIterations = integerFlag('truth-iterations', values['truth-iterations'], 0) ?? 10;
  if (values['truth-only'] && truthIterations === 0)
    throw new UsageError('--truth-only needs --truth-iterations of at least 1');
  if (values['truth-only'] && values['report-only'])
    throw new UsageError('--truth-only and --report-only: one or the other');
  return {
    env,
    methods,
    evalTasks: integerFlag('eval-tasks', values['eval-tasks'], 1) ?? 64,
    whitenMethods,
    inProcess: values['in-process'] ?? false,
    reportOnly: values['report-only'] ?? false,
    truthOnly: values['truth-only'] ?? false,
    dataFile: path.resolve(values.data ?? path.join(outDir, 'data', `experiments-${env}.json`)),
    seeds: integerFlag('seeds', values.seeds, 1) ?? 10,
    iterations: integerFlag('iterations', values.iterations, 1) ?? D.iterations,
    tasksPerIteration: integerFlag('tasks', values.tasks, 1) ?? D.tasksPerIteration,
    groupSize: integerFlag('group-size', values['group-size'], 1) ?? D.groupSize,
    truthIterations,
    outDir,
    ...(values.server === undefined && values.key === undefined
      ? {}
      : { server: { url: values.server, apiKey: values.key } }),
  };
}
