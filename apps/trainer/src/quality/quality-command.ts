import { integerFlag, UsageError, type Command, type Flag, type FlagValues } from '@creditlab/cli';
import { textEnvironment } from '@creditlab/envs';
import path from 'node:path';
import type { QualityPlan } from './quality-run';
import { docsFolder } from '../docs-folder';

const QUALITY_FLAGS = {
  env: {
    type: 'string',
    value: 'E,E,...',
    help: 'environments with an exact truth',
    byDefault: 'errand-tiny,household-tiny,sokoban-tiny',
  },
  draws: {
    type: 'string',
    value: 'K',
    help: 'draws of the companions per task, snapshot and G',
    byDefault: '16',
  },
  tasks: { type: 'string', value: 'T', help: 'training tasks per draw', byDefault: '16' },
  'group-sizes': { type: 'string', value: 'G,G,...', help: 'group sizes', byDefault: '4,8,16,32' },
  'snapshot-iterations': {
    type: 'string',
    value: 'N',
    help: 'iterations of the training run the snapshots come from',
    byDefault: '30',
  },
  seed: {
    type: 'string',
    value: 'S',
    help: 'seed of the snapshots’ run and of every draw',
    byDefault: '1',
  },
  resamples: { type: 'string', value: 'B', help: 'bootstrap resamples', byDefault: '1000' },
  out: {
    type: 'string',
    value: 'DIR',
    help: 'folder of estimator-quality.md (each environment’s section is replaced) and its charts',
    byDefault: 'docs/',
  },
  force: {
    type: 'boolean',
    help: 'measure an environment again even if its data file exists',
    byDefault: 'off',
  },
} as const satisfies Record<string, Flag>;

export const QUALITY_COMMAND: Command<typeof QUALITY_FLAGS> = {
  invocation: 'npm run quality --',
  name: 'quality',
  synopsis: ['[--env E,...] [--draws K] [--tasks T] [--group-sizes G,...] [--seed S] [--out DIR]'],
  summary:
    'Measures every estimator against the exact advantage on frozen policy snapshots, in this process (no server): within-group correlation, bias and variance per step, policy-gradient cosine, oracle and no-baseline rows, and the paper claims; writes estimator-quality.md and its charts. Deterministic given the seed (per backend and thread count). An environment whose data file exists is not measured again (resume), unless --force.',
  flags: QUALITY_FLAGS,
  examples: [
    'npm run quality',
    'npm run quality -- --env errand-tiny --draws 4 --group-sizes 4,8 --out /tmp/q',
  ],
  notes: 'exit status: 0 done, 1 failed, 2 bad usage',
};

export function qualityPlan(values: FlagValues<typeof QUALITY_FLAGS>): {
  plan: QualityPlan;
  outDir: string;
  force: boolean;
} {
  const envs = (values.env ?? 'errand-tiny,household-tiny,sokoban-tiny').split(',');
  for (const env of envs) {
    let exact = false;
    try {
      exact = textEnvironment(env).exact;
    } catch (e) {
      throw new UsageError(`--env: ${(e as Error).message}`);
    }
    if (!exact) throw new UsageError(`--env: ${env} has no exact truth (use a tiny size)`);
  }
  const groupSizes = (values['group-sizes'] ?? '4,8,16,32').split(',').map((g) => {
    const n = Number(g);
    if (!Number.isInteger(n) || n < 2)
      throw new UsageError(`--group-sizes: ${JSON.stringify(g)} is not an integer ≥ 2`);
    return n;
  });
  return {
    plan: {
      envs,
      groupSizes,
      draws: integerFlag('draws', values.draws, 2) ?? 16,
      tasks: integerFlag('tasks', values.tasks, 2) ?? 16,
      levels: [0, 0.25, 0.5, 0.75],
      snapshotIterations:
        integerFlag('snapshot-iterations', values['snapshot-iterations'], 1) ?? 30,
      gradientDraws: 4,
      resamples: integerFlag('resamples', values.resamples, 100) ?? 1000,
      seed: integerFlag('seed', values.seed, 0) ?? 1,
      gamma: 0.95,
      claimsGroupSize: groupSizes.includes(8) ? 8 : (groupSizes[0] as number),
    },
    outDir: path.resolve(values.out ?? docsFolder()),
    force: values.force ?? false,
  };
}
