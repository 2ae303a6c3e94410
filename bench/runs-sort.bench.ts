/**
 * `npm run bench:runs-sort`: the runs list ordered by a metric's last value (`runs(sort: METRIC_DESC,
 * sortMetric: …)`), as the server reads it (`pageByMetric` over the run_metrics projection), for a
 * metric every iteration logs and for a name no run logged (a typo). Baselines in the same run: a page
 * of the same runs by creation time (the list's default order, through the runs' primary key and
 * creation index), and the way the first version read the value, walking each run's iterations
 * backwards to the last one holding the metric.
 */
import { runMigrations } from '@creditlab/db';
import { pageByMetric } from '../apps/server/src/runs/runs-by-metric';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { startBenchDatabase } from './support/bench-server';

const RUNS = Number(process.env.BENCH_RUNS_SORT_RUNS ?? 400);
const ITERATIONS = Number(process.env.BENCH_RUNS_SORT_ITERATIONS ?? 3000);
const REPEATS = 9;
const PAGE = 26; // a page of 25 and the row that says whether there is another

const FROM_ITERATIONS = `SELECT v.id, v.value FROM (
    SELECT r.id, (SELECT (metrics->>$2)::float8 FROM iterations i
                  WHERE i.run_id = r.id AND metrics ? $2 ORDER BY iteration DESC LIMIT 1) AS value
    FROM unnest($1::uuid[]) AS r(id)) v
  ORDER BY v.value DESC NULLS LAST, v.id DESC LIMIT ${PAGE}`;
const BY_CREATED = `SELECT id FROM runs WHERE id = ANY($1::uuid[]) ORDER BY created_at DESC, id DESC LIMIT ${PAGE}`;

async function medianMs(work: () => Promise<unknown>): Promise<number> {
  await work(); // warm
  const ms: number[] = [];
  for (let k = 0; k < REPEATS; k++) {
    const t0 = performance.now();
    await work();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

async function main(): Promise<void> {
  const db = await startBenchDatabase();
  const rows: string[] = [];
  let baseline = NaN;
  try {
    await runMigrations(db.pool);
    await db.pool.query(
      `INSERT INTO runs (name, project, env, method)
       SELECT 'run ' || g, 'default', 'e', 'grpo' FROM generate_series(1, $1::int) g`,
      [RUNS],
    );
    // Every iteration logs successRate and loss; the summary as appends write it (the last of each).
    await db.pool.query(
      `INSERT INTO iterations (run_id, iteration, metrics, last_seq)
       SELECT r.id, i, jsonb_build_object('successRate', random(), 'loss', random()), 1
       FROM runs r, generate_series(0, $1::int - 1) i`,
      [ITERATIONS],
    );
    await db.pool.query(
      `INSERT INTO run_metrics (run_id, name, iteration, value)
       SELECT DISTINCT ON (i.run_id, m.key) i.run_id, m.key, i.iteration, (m.value #>> '{}')::float8
       FROM iterations i, jsonb_each(i.metrics) m ORDER BY i.run_id, m.key, i.iteration DESC`,
    );
    await db.pool.query('VACUUM ANALYZE');
    const ids = (await db.pool.query<{ id: string }>('SELECT id FROM runs')).rows.map((r) => r.id);
    baseline = await medianMs(() => db.pool.query(BY_CREATED, [ids]));
    for (const metric of ['successRate', 'succes_rate']) {
      const server = await medianMs(() =>
        pageByMetric(db.pool, ids, { metric, descending: true }, undefined, PAGE),
      );
      const first = await medianMs(() => db.pool.query(FROM_ITERATIONS, [ids, metric]));
      const label =
        metric === 'successRate'
          ? 'successRate (every iteration logs it)'
          : `${metric} (no run logged it)`;
      console.log(
        `${label}: run_metrics ${fmt(server)} ms, from iterations ${fmt(first)} ms, by created ${fmt(baseline)} ms`,
      );
      rows.push(
        `| ${label} | ${fmt(server)} ms | ${fmt(server / baseline, 1)} | ${fmt(first)} ms | ${fmt(first / baseline, 0)} |`,
      );
    }
  } finally {
    await db.close();
  }
  writeSection(
    'runs-sort',
    `
## Runs list sorted by a metric (\`npm run bench:runs-sort\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:runs-sort\` (\`BENCH_RUNS_SORT_RUNS\`, default 400; \`BENCH_RUNS_SORT_ITERATIONS\`, default 3000).
Database: ${db.description}.

${RUNS} runs of ${ITERATIONS.toLocaleString('en')} iterations each (${(RUNS * ITERATIONS).toLocaleString('en')} iteration rows), every
iteration logging \`successRate\` and \`loss\`. One page (25 runs and one more) of \`runs(sort: METRIC_DESC,
sortMetric: …)\` as the server orders it: each run's last value from the \`run_metrics\` projection, one
primary-key lookup per run. Beside it, the way the first version of the sort read the value (each run's
iterations walked backwards to the last one holding the metric), and the baseline the ratios are to: a page of
the same runs by creation time, ${fmt(baseline)} ms. Medians of ${REPEATS} after a warm-up.

| sortMetric | from run_metrics | ÷ by created | from iterations | ÷ by created |
|---|---:|---:|---:|---:|
${rows.join('\n')}
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
