import { CreditlabClient, resolveConnection } from '@creditlab/client';
import { helpText, parseCommandLine, reportUsageError, UsageError } from '@creditlab/cli';
import { textEnvironment } from '@creditlab/envs';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';
import { EXPERIMENT_COMMAND, experimentPlan, type ExperimentPlan } from './experiment-command';
import { writeReport, type RunResult, type TruthRow } from './experiment-report';
import type { RunStart } from './iteration';
import { connectionRefused, stopOnSignal } from './stop-signal';

/**
 * `npm run experiment -- --env household-tiny --methods grpo,gigpo,gaca,gated-bepo,gagpo,bipace --seeds 3`
 * Trains every method with paired seeds (the same seed means the same initial weights and the same first
 * tasks), on a fresh server of its own unless given --server, and writes experiments.md and a
 * learning-curve PNG (see --help).
 */
const EVAL_EVERY = 5;

/** The server the runs go to, and what to do with it afterwards. */
interface Target {
  url: string;
  apiKey?: string;
  close(): Promise<void>;
}

async function main(argv: string[]): Promise<number> {
  let plan: ExperimentPlan;
  try {
    const line = parseCommandLine(EXPERIMENT_COMMAND, argv);
    if (line.help) {
      process.stdout.write(helpText(EXPERIMENT_COMMAND));
      return 0;
    }
    plan = experimentPlan(line.values);
  } catch (e) {
    if (e instanceof UsageError) return reportUsageError('experiment', e);
    throw e;
  }
  const stop = stopOnSignal('experiment');
  const target = await connect(plan);
  const results: RunResult[] = [];
  let truth: TruthRow[] = [];
  try {
    const { train } = await import('./trainer');
    const base = (method: string, seed: number): TrainerConfig => ({
      ...DEFAULT_CONFIG,
      serverUrl: target.url,
      env: plan.env,
      method,
      seed,
      iterations: plan.iterations,
      tasksPerIteration: plan.tasksPerIteration,
      groupSize: plan.groupSize,
      evalEvery: EVAL_EVERY,
      checkpointEvery: 0,
      trueAdvantages: false,
    });
    const hooks = {
      shouldStop: stop.requested,
      onStart: (r: RunStart) => {
        stop.current = r.runId;
        process.stderr.write(`run ${r.runId}: ${r.iterations} iterations\n`);
      },
    };
    if (plan.truthIterations > 0 && textEnvironment(plan.env).exact) {
      const config = { ...base('grpo', 1), iterations: plan.truthIterations, trueAdvantages: true };
      const { runId, status } = await train(
        { ...config, evalEvery: config.iterations },
        hooks,
        target.apiKey,
      );
      if (status === 'aborted') return 130;
      truth = await scoreAgainstTruth(target, runId, plan.methods);
    }
    for (let seed = 1; seed <= plan.seeds; seed++) {
      for (const method of plan.methods) {
        const t0 = performance.now();
        const { reports, status } = await train(base(method, seed), hooks, target.apiKey);
        if (status === 'aborted') return 130;
        results.push({ method, seed, reports, seconds: (performance.now() - t0) / 1000 });
        const last = reports.at(-1);
        process.stderr.write(
          `${method} seed ${seed}: held-out ${(100 * (last?.evaluation ?? 0)).toFixed(0)}% after ${reports.length} iterations\n`,
        );
      }
    }
  } finally {
    await target.close();
  }
  const file = await writeReport(plan, EVAL_EVERY, results, truth);
  process.stderr.write(`wrote ${file} and experiments-${plan.env}.png beside it\n`);
  return 0;
}

/** The server to train against, as for `npm run train`: --server/--key, else CREDITLAB_URL/CREDITLAB_API_KEY, else the credentials file. */
async function connect(plan: ExperimentPlan): Promise<Target> {
  const { url, apiKey } = resolveConnection(plan.server ?? {});
  return { url, apiKey, close: async () => undefined };
}

/** Every method scored by the server against the exact advantages the run logged. */
async function scoreAgainstTruth(
  target: Target,
  runId: string,
  methods: string[],
): Promise<TruthRow[]> {
  const client = new CreditlabClient({ url: target.url, apiKey: target.apiKey });
  const { compare } = await client.graphql<{ compare: { againstReference: TruthRow[] } }>(
    `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m) {
       againstReference { method steps pearson spearman signAgreement } } }`,
    { id: runId, m: methods.map((name) => ({ name })) },
  );
  process.stderr.write(`scored ${methods.length} methods against the true advantages\n`);
  return compare.againstReference;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(
      `experiment: ${connectionRefused(e) ? 'no Creditlab server there (check --server)' : (e as Error).message}\n`,
    );
    process.exit(1);
  },
);
