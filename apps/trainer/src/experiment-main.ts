import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine, writeSection } from '../../../bench/support/bench-report';
import { startBenchServer, type BenchServer } from '../../../bench/support/bench-server';
import { CreditlabClient } from '@creditlab/client';
import { textEnvironment } from '@creditlab/envs';
import { DEFAULT_CONFIG } from './config';
import { lineChartPng } from './png-plot';
import { train, type IterationReport } from './trainer';

/**
 * `npm run experiment -- --env household-tiny --methods grpo,gigpo,gaca,gated-bepo,gagpo,bipace --seeds 3`
 * Trains every method with paired seeds (the same seed means the same initial weights and the same first
 * tasks) on a fresh server of its own, and writes docs/experiments.md and a learning-curve PNG.
 */
const EVAL_EVERY = 5;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      env: { type: 'string' },
      methods: { type: 'string' },
      seeds: { type: 'string' },
      iterations: { type: 'string' },
      'truth-iterations': { type: 'string' },
    },
  });
  const env = values.env ?? 'household-tiny';
  textEnvironment(env); // an unknown name stops here, with the list of environments
  const methods = (values.methods ?? 'grpo,gigpo,gaca,gated-bepo,gagpo,bipace').split(',');
  const seeds = Number(values.seeds ?? 3);
  const iterations = Number(values.iterations ?? DEFAULT_CONFIG.iterations);
  const truthIterations = Number(values['truth-iterations'] ?? 10);
  const bench = await startBenchServer({});
  const results: { method: string; seed: number; reports: IterationReport[]; seconds: number }[] =
    [];
  let truth: TruthRow[] = [];
  try {
    if (truthIterations > 0 && textEnvironment(env).exact)
      truth = await scoreAgainstTruth(bench, env, methods, truthIterations);
    for (let seed = 1; seed <= seeds; seed++) {
      for (const method of methods) {
        const t0 = performance.now();
        const { reports } = await train(
          {
            ...DEFAULT_CONFIG,
            serverUrl: bench.server.url,
            env,
            method,
            iterations,
            seed,
            evalEvery: EVAL_EVERY,
            checkpointEvery: 0,
            trueAdvantages: false,
          },
          {},
          bench.adminKey,
        );
        results.push({ method, seed, reports, seconds: (performance.now() - t0) / 1000 });
        const last = reports.at(-1);
        process.stderr.write(
          `${method} seed ${seed}: held-out ${(100 * (last?.evaluation ?? 0)).toFixed(0)}% after ${reports.length} iterations\n`,
        );
      }
    }
  } finally {
    await bench.close();
  }
  await writeReport(env, methods, seeds, iterations, results, truth, truthIterations);
}

async function writeReport(
  env: string,
  methods: string[],
  seeds: number,
  iterations: number,
  results: { method: string; seed: number; reports: IterationReport[]; seconds: number }[],
  truth: TruthRow[],
  truthIterations: number,
) {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
  const evalCurve = (reports: IterationReport[]) =>
    reports
      .filter((r) => r.evaluation !== undefined)
      .map((r) => [r.iteration + 1, r.evaluation as number] as [number, number]);
  const rows = methods.map((method) => {
    const runs = results.filter((r) => r.method === method);
    const finals = runs.map((r) => evalCurve(r.reports).at(-1)?.[1] ?? 0);
    const bests = runs.map((r) => Math.max(0, ...evalCurve(r.reports).map(([, y]) => y)));
    const to80 = runs.map((r) => evalCurve(r.reports).find(([, y]) => y >= 0.8)?.[0]);
    const reached = to80.filter((x): x is number => x !== undefined);
    const firstTrain = mean(runs.map((r) => r.reports[0]?.successRate ?? 0));
    return `| ${method} | ${(100 * mean(finals)).toFixed(0)} % (${finals.map((f) => (100 * f).toFixed(0)).join(', ')}) | ${(100 * mean(bests)).toFixed(0)} % | ${reached.length ? `${mean(reached).toFixed(0)} (${reached.length}/${runs.length} seeds)` : `not reached`} | ${(100 * firstTrain).toFixed(0)} % | ${mean(runs.map((r) => r.seconds)).toFixed(0)} s |`;
  });
  const series = methods.map((method) => {
    const curves = results.filter((r) => r.method === method).map((r) => evalCurve(r.reports));
    const xs = curves[0]?.map(([x]) => x) ?? [];
    return {
      label: method,
      points: xs.map((x, i) => [x, mean(curves.map((c) => c[i]?.[1] ?? 0))] as [number, number]),
    };
  });
  const docs = path.resolve(__dirname, '../../../docs');
  await mkdir(docs, { recursive: true });
  const png = `experiments-${env}.png`;
  await writeFile(path.join(docs, png), lineChartPng(series, iterations));
  const colours = ['blue', 'orange', 'green', 'red', 'purple', 'brown', 'pink', 'grey'];
  const c = DEFAULT_CONFIG;
  // One section per environment; hand-written observations outside the markers survive a re-run.
  writeSection(
    `experiment:${env}`,
    `## ${env}: ${methods.length} methods, ${seeds} paired seeds, ${iterations} iterations

Command: \`npm run experiment -- --env ${env} --methods ${methods.join(',')} --seeds ${seeds} --iterations ${iterations}\`.
Machine: ${machineLine()}; run on ${new Date().toISOString().slice(0, 10)}.
Trainer defaults (apps/trainer/src/config.ts): B = ${c.tasksPerIteration} tasks × G = ${c.groupSize} rollouts per iteration, PPO-clip
(ε ${c.ppo.clip}, ${c.ppo.epochs} epochs × ${c.ppo.minibatches} minibatches, Adam ${c.ppo.learningRate}, entropy ${c.ppo.entropyCoef}), bag-of-tokens policy (${c.policy.hidden} hidden), each method at its
registry defaults. Held-out success: the sampling policy, 4 rollouts on each of ${c.evalTasks} evaluation tasks (held-out seeds), every ${EVAL_EVERY} iterations.

| method | final held-out success (per seed) | best held-out | iterations to 80 % held-out | training success, iteration 1 (untrained policy) | wall time per run |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

![mean held-out success per iteration](${png})

Curves: mean held-out success over seeds (y from 0 to 100 %, grid lines every 20 %; x: iterations 0 to ${iterations}, one point per evaluation); colours in method order: ${methods.map((m, i) => `${m} ${colours[i % colours.length]}`).join(', ')}.
${
  truth.length
    ? `
Against the truth: a GRPO run of ${truthIterations} iterations (seed 1) logs every step's exact advantage under the rollout
policy (\`trueAdvantage\`, γ ${c.trueAdvantageGamma}); \`compare(...) { againstReference }\` then scores every method on those
identical rollouts (${truth[0]!.steps} steps).

| method | Pearson with the true advantage | Spearman | sign agreement |
|---|---:|---:|---:|
${truth.map((t) => `| ${t.method} | ${fmt(t.pearson)} | ${fmt(t.spearman)} | ${(100 * t.signAgreement).toFixed(0)} % |`).join('\n')}`
    : ''
}`,
    path.join(docs, 'experiments.md'),
    '# Experiments\n\nWritten by `npm run experiment`, one section per environment; observations are written by hand below each.\n',
  );
  process.stderr.write(`wrote docs/experiments.md and docs/${png}\n`);
}

interface TruthRow {
  method: string;
  steps: number;
  pearson: number | null;
  spearman: number | null;
  signAgreement: number;
}

const fmt = (x: number | null) => (x === null ? '–' : x.toFixed(2));

/** One run that logs the exact advantages, then every method scored against them by the server. */
async function scoreAgainstTruth(
  bench: BenchServer,
  env: string,
  methods: string[],
  iterations: number,
): Promise<TruthRow[]> {
  const { runId } = await train(
    {
      ...DEFAULT_CONFIG,
      serverUrl: bench.server.url,
      env,
      method: 'grpo',
      iterations,
      seed: 1,
      evalEvery: iterations,
      checkpointEvery: 0,
      trueAdvantages: true,
    },
    {},
    bench.adminKey,
  );
  const client = new CreditlabClient({ url: bench.server.url, apiKey: bench.adminKey });
  const { compare } = await client.graphql<{ compare: { againstReference: TruthRow[] } }>(
    `query($id: ID!, $m: [MethodInput!]!) { compare(runId: $id, methods: $m) {
       againstReference { method steps pearson spearman signAgreement } } }`,
    { id: runId, m: methods.map((name) => ({ name })) },
  );
  process.stderr.write(`scored ${methods.length} methods against the true advantages\n`);
  return compare.againstReference;
}

main().catch((e: unknown) => {
  process.stderr.write(`experiment: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
