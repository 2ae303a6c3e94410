import { resolveConnection } from '@creditlab/client';
import { textEnvironment } from '@creditlab/envs';
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';
import { fork, retrain, train, type IterationReport } from './trainer';

/** The server this run talks to, for the message when it cannot be reached. */
let target = '';

/** `npm run train -- --env household-tiny --method gigpo --iterations 30 --seed 1` */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      env: { type: 'string' },
      method: { type: 'string' },
      param: { type: 'string', multiple: true },
      iterations: { type: 'string' },
      tasks: { type: 'string' },
      'group-size': { type: 'string' },
      seed: { type: 'string' },
      server: { type: 'string' },
      key: { type: 'string' },
      fork: { type: 'string' },
      'from-checkpoint': { type: 'string' },
      retrain: { type: 'string' },
    },
  });
  const params = Object.fromEntries(
    (values.param ?? []).map((p) => {
      const [k, v = ''] = p.split('=');
      return [
        k,
        v === 'true' ? true : v === 'false' ? false : Number.isNaN(Number(v)) ? v : Number(v),
      ];
    }),
  );
  // --server/--key, else CREDITLAB_URL/CREDITLAB_API_KEY, else the embedded server's credentials file.
  const server = resolveConnection({ url: values.server, apiKey: values.key });
  target = server.url;
  const fromCheckpoint = Number(values['from-checkpoint'] ?? 0);
  const config: TrainerConfig = {
    ...DEFAULT_CONFIG,
    serverUrl: server.url,
    env: values.env ?? DEFAULT_CONFIG.env,
    method: values.method ?? DEFAULT_CONFIG.method,
    methodParams: params,
    iterations: Number(values.iterations ?? DEFAULT_CONFIG.iterations),
    tasksPerIteration: Number(values.tasks ?? DEFAULT_CONFIG.tasksPerIteration),
    groupSize: Number(values['group-size'] ?? DEFAULT_CONFIG.groupSize),
    seed: Number(values.seed ?? DEFAULT_CONFIG.seed),
  };
  try {
    textEnvironment(config.env);
    for (const [flag, v] of Object.entries({
      iterations: config.iterations,
      tasks: config.tasksPerIteration,
      'group-size': config.groupSize,
      seed: config.seed,
      'from-checkpoint': fromCheckpoint,
    }))
      if (!Number.isInteger(v) || v < 0) throw new Error(`--${flag}: a whole number, got ${v}`);
  } catch (e) {
    process.stderr.write(`train: ${(e as Error).message}\n`);
    process.exit(2);
  }
  let stop = false;
  process.once('SIGINT', () => {
    stop = true;
    process.stderr.write('\nstopping after this iteration; the run will be marked aborted\n');
  });
  const hooks = {
    shouldStop: () => stop,
    onIteration: (r: IterationReport) =>
      process.stderr.write(
        `${bar((r.iteration + 1) / config.iterations)} iteration ${r.iteration + 1}/${config.iterations}  success ${(100 * r.successRate).toFixed(0)}%` +
          `${r.evaluation === undefined ? '' : `  held-out ${(100 * r.evaluation).toFixed(0)}%`}  ${r.stepsPerSecond.toFixed(0)} steps/s\n`,
      ),
  };
  // --fork RUN_ID [--from-checkpoint K]: that run's config and seed under --method, from scratch or from
  // its checkpoint K (its weights after K iterations), linked to it.
  // --retrain RUN_ID: that run's updates again on its stored rollouts, under --method.
  const { runId } = values.retrain
    ? await retrain(server, values.retrain, config.method, params, hooks)
    : values.fork
      ? await fork(
          server,
          values.fork,
          config.method,
          params,
          hooks,
          values.iterations ? { iterations: config.iterations } : {},
          fromCheckpoint,
        )
      : await train(config, hooks, server.apiKey);
  process.stdout.write(`${runId}\n`);
}

function bar(fraction: number, width = 20): string {
  const full = Math.round(fraction * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

main().catch((e: unknown) => {
  const refused = (e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
  process.stderr.write(
    refused
      ? `train: no Creditlab server at ${target} (start one with \`npm start\`, or pass --server)\n`
      : `train: ${(e as Error).message}\n`,
  );
  process.exit(1);
});
