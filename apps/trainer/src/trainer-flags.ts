import { UsageError, type Flag } from '@creditlab/cli';
import {
  EstimatorInputError,
  getMethod,
  parseParamText,
  resolveParams,
} from '@creditlab/estimators';
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

/**
 * `key=value` texts as the method's typed parameters, read and checked as `estimate` reads them
 * (so a mistake stops here, before a run exists, rather than at the server after the first iteration).
 * `flags` names the command-line flags a message blames.
 */
export function methodParams(
  method: string,
  texts: string[],
  flags: { method: string; param: string },
): Record<string, unknown> {
  try {
    const schema = getMethod(method).params;
    const params: Record<string, unknown> = {};
    for (const text of texts) {
      const eq = text.indexOf('=');
      if (eq <= 0)
        throw new UsageError(`${flags.param} expects key=value, got ${JSON.stringify(text)}`);
      params[text.slice(0, eq)] = parseParamText(schema, text.slice(0, eq), text.slice(eq + 1));
    }
    resolveParams(method, schema, params);
    return params;
  } catch (e) {
    if (!(e instanceof EstimatorInputError)) throw e;
    throw new UsageError(
      `${e.code === 'UNKNOWN_METHOD' ? flags.method : flags.param}: ${e.message}`,
    );
  }
}

/**
 * An experiment's arm: a method at its defaults (`bipace`), or with parameters
 * (`bipace@clusterEpsilon=0.01`, more as `@k=v@k=v`). `name` is the whole text: it keys the arm's runs
 * and labels it in the report.
 */
export interface MethodArm {
  name: string;
  method: string;
  params: Record<string, unknown>;
}

export function methodArm(text: string, flag: string): MethodArm {
  const [method = '', ...assignments] = text.split('@');
  return {
    name: text,
    method,
    params: methodParams(method, assignments, { method: flag, param: flag }),
  };
}
