import { UsageError, type Flag } from '@creditlab/cli';
import { ENVIRONMENT_NAMES, textEnvironment } from '@creditlab/envs';
import { DEFAULT_CONFIG } from './config';

/** Flags `train` and `experiment` share: the environment and the batch size. */
export const ENVIRONMENT_FLAGS = {
  env: {
    type: 'string',
    value: 'E',
    help: `environment: ${ENVIRONMENT_NAMES.join(', ')}`,
    byDefault: DEFAULT_CONFIG.env,
  },
  tasks: {
    type: 'string',
    value: 'B',
    help: 'tasks per iteration',
    byDefault: String(DEFAULT_CONFIG.tasksPerIteration),
  },
  'group-size': {
    type: 'string',
    value: 'G',
    help: 'rollouts per task',
    byDefault: String(DEFAULT_CONFIG.groupSize),
  },
} as const satisfies Record<string, Flag>;

/** `--env`'s value, checked (the message lists the environments). */
export function environmentFlag(text: string | undefined): string {
  const env = text ?? DEFAULT_CONFIG.env;
  try {
    textEnvironment(env);
  } catch (e) {
    throw new UsageError(`--env: ${(e as Error).message}`);
  }
  return env;
}
