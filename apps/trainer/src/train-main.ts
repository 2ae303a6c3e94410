import { resolveConnection } from '@creditlab/client';
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';
import { fork, retrain, train, type IterationReport } from './trainer';

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
      'checkpoint-dir': { type: 'string' },
      fork: { type: 'string' },
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
  const config: TrainerConfig = {
    ...DEFAULT_CONFIG,
    serverUrl: server.url,
    env: (values.env as TrainerConfig['env']) ?? DEFAULT_CONFIG.env,
    method: values.method ?? DEFAULT_CONFIG.method,
    methodParams: params,
    iterations: Number(values.iterations ?? DEFAULT_CONFIG.iterations),
    tasksPerIteration: Number(values.tasks ?? DEFAULT_CONFIG.tasksPerIteration),
    groupSize: Number(values['group-size'] ?? DEFAULT_CONFIG.groupSize),
    seed: Number(values.seed ?? DEFAULT_CONFIG.seed),
    checkpointDir: values['checkpoint-dir'] ?? DEFAULT_CONFIG.checkpointDir,
  };
  let stop = false;
  process.once('SIGINT', () => {
    stop = true;
    process.stderr.write('\nstopping after this iteration; the run will be marked aborted\n');
  });
  const hooks = {
    shouldStop: () => stop,
    onIteration: (r: IterationReport) =>
      process.stderr.write(
        `iteration ${r.iteration + 1}/${config.iterations}  success ${(100 * r.successRate).toFixed(0)}%` +
          `${r.evaluation === undefined ? '' : `  held-out ${(100 * r.evaluation).toFixed(0)}%`}  ${r.stepsPerSecond.toFixed(0)} steps/s\n`,
      ),
  };
  // --fork RUN_ID: replay that run's config and seed under --method (from scratch, linked to it).
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
        )
      : await train(config, hooks, server.apiKey);
  process.stdout.write(`${runId}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`train: ${(e as Error).message}\n`);
  process.exit(1);
});
