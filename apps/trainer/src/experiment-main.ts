import { resolveConnection } from '@creditlab/client';
import { helpText, parseCommandLine, reportUsageError, UsageError } from '@creditlab/cli';
import { textEnvironment } from '@creditlab/envs';
import { DEFAULT_CONFIG, type TrainerConfig } from './config';
import { EXPERIMENT_COMMAND, experimentPlan, type ExperimentPlan } from './experiment-command';
import { inProcessBackend, serverBackend, type ExperimentBackend } from './experiment-backends';
import { loadData, runKey, saveData, type ExperimentData, type RunRecord } from './experiment-data';
import {
  areaUnderCurve,
  bestStepLevel,
  machineOfRuns,
  splitArms,
  writeReport,
} from './experiment-report';
import { checkTruthSection, writeTruthSection } from './experiment-sections';
import type { IterationReport, RunStart } from './iteration';
import { connectionRefused, stopOnSignal } from './stop-signal';
import { methodArm } from './trainer-flags';

/**
 * `npm run experiment -- --env household-tiny --seeds 10`: trains every method with paired seeds (the
 * same seed means the same initial weights and the same first tasks) on a Creditlab server, then a
 * control arm on whitened advantages, and writes experiments.md with paired tests and a learning-curve
 * chart (see --help). Every finished run is saved to the data file at once; a re-run skips them, so an
 * interrupted experiment resumes where it stopped.
 */
const EVAL_EVERY = 5;

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
  if (plan.reportOnly) {
    const file = await writeReport(plan, EVAL_EVERY, loadData(plan.dataFile, plan.env));
    process.stderr.write(`wrote ${file}\n`);
    return 0;
  }
  const exact = textEnvironment(plan.env).exact;
  if (plan.truthOnly && !exact)
    return reportUsageError(
      'experiment',
      new UsageError(`--truth-only: ${plan.env} has no exact advantages`),
    );
  if (plan.truthOnly) await checkTruthSection(plan);
  const stop = stopOnSignal('experiment');
  const backend = plan.inProcess
    ? inProcessBackend()
    : serverBackend(
        resolveConnection(plan.server ?? {}).url,
        resolveConnection(plan.server ?? {}).apiKey,
      );
  const serverUrl = plan.inProcess ? 'in-process' : resolveConnection(plan.server ?? {}).url;
  const data = loadData(plan.dataFile, plan.env);
  const hooks = {
    shouldStop: stop.requested,
    onStart: (r: RunStart) => {
      stop.current = r.runId;
      process.stderr.write(`run ${r.runId}: ${r.iterations} iterations\n`);
    },
  };
  if (plan.truthOnly || (plan.truthIterations > 0 && exact && !data.truth)) {
    if (!(await truthRun(plan, backend, serverUrl, hooks, data))) return 130;
    if (plan.truthOnly) {
      process.stderr.write(`wrote ${await writeTruthSection(plan, data)}\n`);
      return 0;
    }
  }
  const arm = async (methods: string[], whiten: boolean): Promise<boolean> => {
    for (let seed = 1; seed <= plan.seeds; seed++)
      for (const method of methods) {
        if (data.runs.some((r) => runKey(r) === runKey({ method, whiten, seed }))) continue;
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        const config = baseConfig(plan, serverUrl, method, seed, whiten);
        const { runId, reports, status } = await backend.train(config, hooks);
        if (status === 'aborted') return false;
        const cpu = process.cpuUsage(c0);
        const rates = await backend.rates(runId, reports.length);
        const record = recordOf(method, whiten, seed, runId, reports, rates);
        const seconds = (performance.now() - t0) / 1000;
        data.runs.push({ ...record, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
        data.machine = machineOfRuns();
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

/**
 * The truth run: GRPO from seed 1 logging every step's exact advantage, every method at its defaults
 * scored against them; kept in the data file. False when stopped.
 */
async function truthRun(
  plan: ExperimentPlan,
  backend: ExperimentBackend,
  serverUrl: string,
  hooks: Parameters<ExperimentBackend['train']>[1],
  data: ExperimentData,
): Promise<boolean> {
  const config = { ...baseConfig(plan, serverUrl, 'grpo', 1, false), trueAdvantages: true };
  const truthConfig = {
    ...config,
    iterations: plan.truthIterations,
    evalEvery: plan.truthIterations,
  };
  const { runId, status } = await backend.train(truthConfig, hooks);
  if (status === 'aborted') return false;
  // the methods at their defaults; an arm with parameters is a variant of one of them
  const { atDefaults } = splitArms(plan.methods);
  data.truth = { runId, rows: await backend.truth(runId, atDefaults) };
  process.stderr.write(`scored ${atDefaults.length} methods against the true advantages\n`);
  saveData(plan.dataFile, data);
  return true;
}

function baseConfig(
  plan: ExperimentPlan,
  serverUrl: string,
  arm: string,
  seed: number,
  whiten: boolean,
): TrainerConfig {
  const { method, params } = methodArm(arm, '--methods');
  return {
    ...DEFAULT_CONFIG,
    serverUrl,
    env: plan.env,
    method,
    methodParams: params,
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(
      `experiment: ${connectionRefused(e) ? 'no Creditlab server there (check --server)' : (e as Error).message}\n`,
    );
    process.exit(1);
  },
);
