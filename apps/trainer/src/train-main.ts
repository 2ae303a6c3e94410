import {
  CreditlabApiError,
  CreditlabGraphQLError,
  resolveConnection,
  type Connection,
} from '@creditlab/client';
import { helpText, parseCommandLine, reportUsageError, UsageError } from '@creditlab/cli';
import { TrainerInputError } from './errors';
import type { IterationReport, RunStart, TrainerHooks } from './iteration';
import type { EndStatus } from './run-ending';
import { connectionRefused, stopOnSignal } from './stop-signal';
import { TRAIN_COMMAND, trainPlan, type TrainPlan } from './train-command';

/** `npm run train -- --env household-tiny --method gigpo --iterations 30 --seed 1` (see --help). */
async function main(argv: string[]): Promise<number> {
  let plan: TrainPlan;
  let server: Connection;
  try {
    const line = parseCommandLine(TRAIN_COMMAND, argv);
    if (line.help) {
      process.stdout.write(helpText(TRAIN_COMMAND));
      return 0;
    }
    // --server/--key, else CREDITLAB_URL/CREDITLAB_API_KEY, else the credentials file.
    server = resolveConnection({ url: line.values.server, apiKey: line.values.key });
    plan = trainPlan(line.values, server.url);
  } catch (e) {
    if (e instanceof UsageError) return reportUsageError('train', e);
    throw e;
  }
  const stop = stopOnSignal('train');
  let total = 0;
  const hooks: TrainerHooks = {
    shouldStop: stop.requested,
    onStart: (run: RunStart) => {
      stop.current = run.runId;
      total = run.iterations;
      process.stderr.write(
        `run ${run.runId}: iterations ${run.firstIteration + 1} to ${run.iterations}\n`,
      );
    },
    onIteration: (r: IterationReport) => process.stderr.write(`${progressLine(r, total)}\n`),
  };
  try {
    const { runId, status } = await execute(plan, server, hooks);
    process.stdout.write(`${runId}\n`);
    return status === 'aborted' ? 130 : 0;
  } catch (e) {
    return reportFailure(e, server.url);
  }
}

/** Loads the trainer (and TensorFlow.js) only now: `--help` and usage errors answer at once. */
async function execute(
  plan: TrainPlan,
  server: Connection,
  hooks: TrainerHooks,
): Promise<{ runId: string; status: EndStatus }> {
  switch (plan.mode) {
    case 'train':
      return (await import('./trainer')).train(plan.config, hooks, server.apiKey);
    case 'fork':
      return (await import('./fork')).fork(
        server,
        plan.parent,
        plan.method,
        plan.params,
        hooks,
        plan.overrides,
        plan.fromCheckpoint,
      );
    case 'retrain':
      return (await import('./retrain')).retrain(
        server,
        plan.parent,
        plan.method,
        plan.params,
        hooks,
        {
          iterations: plan.iterations,
        },
      );
  }
}

/** `[#####...............] iteration 5/20  success 25%  held-out 13%  180 steps/s` */
export function progressLine(r: IterationReport, total: number): string {
  const full = Math.round(((r.iteration + 1) / total) * 20);
  const bar = `[${'#'.repeat(full)}${'.'.repeat(Math.max(0, 20 - full))}]`;
  const success = Number.isNaN(r.successRate)
    ? ''
    : `  success ${(100 * r.successRate).toFixed(0)}%`;
  const heldOut =
    r.evaluation === undefined ? '' : `  held-out ${(100 * r.evaluation).toFixed(0)}%`;
  return `${bar} iteration ${r.iteration + 1}/${total}${success}${heldOut}  ${r.stepsPerSecond.toFixed(0)} steps/s`;
}

/** One line on stderr; 2 for what the caller asked wrong (nothing was created), 1 otherwise. */
function reportFailure(e: unknown, url: string): number {
  const caller =
    e instanceof TrainerInputError ||
    (e instanceof CreditlabApiError && [401, 403].includes(e.status)) ||
    (e instanceof CreditlabGraphQLError &&
      e.codes.some((c) => ['UNAUTHENTICATED', 'FORBIDDEN'].includes(c)));
  const message = connectionRefused(e)
    ? `no Creditlab server at ${url} (start one with \`npm start\`, or pass --server)`
    : (e as Error).message;
  process.stderr.write(`train: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return caller ? 2 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => process.exit(reportFailure(e, '')),
);
