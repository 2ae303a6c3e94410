import { CreditlabClient, resolveConnection } from '@creditlab/client';
import { helpText, parseCommandLine, reportUsageError, UsageError } from '@creditlab/cli';
import { textEnvironment } from '@creditlab/envs';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';
import { EXPERIMENT_COMMAND, experimentPlan, type ExperimentPlan } from './experiment-command';
import { loadData, runKey, saveData, type ExperimentData, type RunRecord } from './experiment-data';
import { areaUnderCurve, bestStepLevel, writeReport } from './experiment-report';
import type { IterationReport, RunStart } from './iteration';
import { connectionRefused, stopOnSignal } from './stop-signal';

/**
 * `npm run experiment -- --env household-tiny --seeds 10`: trains every method with paired seeds (the
 * same seed means the same initial weights and the same first tasks) on a Creditlab server, then a
 * control arm on whitened advantages, and writes experiments.md with paired tests and a learning-curve
 * chart (see --help). Every finished run is saved to the data file at once; a re-run skips them, so an
 * interrupted experiment resumes where it stopped.
 */
const EVAL_EVERY = 5;

interface Target {
  client: CreditlabClient;
  url: string;
  apiKey?: string;
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
  const { url, apiKey } = resolveConnection(plan.server ?? {});
  const target: Target = { client: new CreditlabClient({ url, apiKey }), url, apiKey };
  const data = loadData(plan.dataFile, plan.env);
  const { train } = await import('./trainer');
  const hooks = {
    shouldStop: stop.requested,
    onStart: (r: RunStart) => {
      stop.current = r.runId;
      process.stderr.write(`run ${r.runId}: ${r.iterations} iterations\n`);
    },
  };
  if (plan.truthIterations > 0 && textEnvironment(plan.env).exact && !data.truth) {
    const config = { ...baseConfig(plan, target, 'grpo', 1, false), trueAdvantages: true };
    const truthConfig = {
      ...config,
      iterations: plan.truthIterations,
      evalEvery: plan.truthIterations,
    };
    const { runId, status } = await train(truthConfig, hooks, apiKey);
    if (status === 'aborted') return 130;
    data.truth = { runId, rows: await scoreAgainstTruth(target, runId, plan.methods) };
    saveData(plan.dataFile, data);
  }
  const arm = async (methods: string[], whiten: boolean): Promise<boolean> => {
    for (let seed = 1; seed <= plan.seeds; seed++)
      for (const method of methods) {
        if (data.runs.some((r) => runKey(r) === runKey({ method, whiten, seed }))) continue;
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        const config = baseConfig(plan, target, method, seed, whiten);
        const { runId, reports, status } = await train(config, hooks, apiKey);
        if (status === 'aborted') return false;
        const cpu = process.cpuUsage(c0);
        const rates = await mechanismRates(target, runId, reports.length);
        const record = recordOf(method, whiten, seed, runId, reports, rates);
        data.runs.push({
          ...record,
          seconds: (performance.now() - t0) / 1000,
          cpuSeconds: (cpu.user + cpu.system) / 1e6,
        });
        saveData(plan.dataFile, data);
        process.stderr.write(
          `${runKey(record)}: held-out area ${areaUnderCurve(record.curve).toFixed(3)}\n`,
        );
      }
    return true;
  };
  if (!(await arm(plan.methods, false))) return 130;
  const control = plan.whitenMethods.map((m) =>
    m === 'best' ? bestStepLevel(data, plan.methods) : m,
  );
  if (!(await arm([...new Set(control)], true))) return 130;
  const file = await writeReport(plan, EVAL_EVERY, data);
  process.stderr.write(`wrote ${file}\n`);
  return 0;
}

function baseConfig(
  plan: ExperimentPlan,
  target: Target,
  method: string,
  seed: number,
  whiten: boolean,
): TrainerConfig {
  return {
    ...DEFAULT_CONFIG,
    serverUrl: target.url,
    env: plan.env,
    method,
    seed,
    iterations: plan.iterations,
    tasksPerIteration: plan.tasksPerIteration,
    groupSize: plan.groupSize,
    evalEvery: EVAL_EVERY,
    evalTasks: plan.evalTasks,
    checkpointEvery: 0,
    trueAdvantages: false,
    whitenAdvantages: whiten,
  };
}

function recordOf(
  method: string,
  whiten: boolean,
  seed: number,
  runId: string,
  reports: IterationReport[],
  rates: { singletonRate: number[]; gateOnRate: number[] },
): Omit<RunRecord, 'seconds' | 'cpuSeconds'> {
  return {
    method,
    whiten,
    seed,
    runId,
    curve: reports.flatMap((r) =>
      r.evaluation === undefined ? [] : [[r.iteration + 1, r.evaluation] as [number, number]],
    ),
    successRate: reports.map((r) => r.successRate),
    advantageRms: reports.map((r) => r.metrics.advantageRms ?? NaN),
    valueLoss: reports.map((r) => r.metrics.valueLoss ?? NaN),
    ...rates,
  };
}

/** GiGPO's singleton rate and Gated-BEPO's gate-on rate on each iteration of a run, computed by the server. */
async function mechanismRates(target: Target, runId: string, iterations: number) {
  const fields = Array.from(
    { length: iterations },
    (_, i) =>
      `i${i}: compare(runId: $id, methods: [{ name: "gigpo" }, { name: "gated-bepo" }], iterations: [${i}]) { methods { rates } }`,
  );
  // The sets first, in one field: fields of one request run concurrently, and concurrent first
  // requests for the same set can fail on the server (its insert-or-select races; see the report).
  await target.client.graphql(
    `query($id: ID!) { compare(runId: $id, methods: [{ name: "gigpo" }, { name: "gated-bepo" }]) { stepCount } }`,
    { id: runId },
  );
  const res = await target.client.graphql<
    Record<string, { methods: { rates: Record<string, number> }[] }>
  >(`query($id: ID!) { ${fields.join('\n')} }`, { id: runId });
  const at = (i: number) => res[`i${i}`]!.methods;
  return {
    singletonRate: Array.from(
      { length: iterations },
      (_, i) => at(i)[0]!.rates.singletonRate ?? NaN,
    ),
    gateOnRate: Array.from({ length: iterations }, (_, i) => at(i)[1]!.rates.gateOnRate ?? NaN),
  };
}

/** Every method scored by the server against the exact advantages the run logged. */
async function scoreAgainstTruth(
  target: Target,
  runId: string,
  methods: string[],
): Promise<unknown[]> {
  const { compare } = await target.client.graphql<{ compare: { againstReference: unknown[] } }>(
    `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m) {
       againstReference { method steps pearson spearman signAgreement } } }`,
    { id: runId, m: methods.map((name) => ({ name })) },
  );
  process.stderr.write(`scored ${methods.length} methods against the true advantages\n`);
  return compare.againstReference;
}

export type { ExperimentData };

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(
      `experiment: ${connectionRefused(e) ? 'no Creditlab server there (check --server)' : (e as Error).message}\n`,
    );
    process.exit(1);
  },
);
