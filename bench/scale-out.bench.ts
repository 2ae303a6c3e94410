/**
 * `npm run bench:scale`: the scale-out rehearsed on one machine (docs/scaling.md). One embedded
 * PostgreSQL; two API processes (CREDITLAB_WORKER=false) and two job workers (CREDITLAB_API=false)
 * on the same DATABASE_URL. Measures ingest from 8 concurrent clients into one process and into
 * two, a batch of recompute jobs on one worker and on two, the runs query's latency meanwhile, and
 * checks in the database that every event is stored once (seq gap-free) and every job done once.
 * Then the peak resident memory of a fresh server process over a 1M-step ingest. Writes
 * docs/benchmarks.md.
 */
import { loadavg } from 'node:os';
import { spawnServer, type ServerProcess } from '../test/support/test-server';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { startBenchDatabase, type BenchDatabase } from './support/bench-server';
import {
  appendNdjson,
  checkRun,
  createRun,
  exactlyOnce,
  finishRun,
  planRequests,
  runClients,
  type RunCheck,
} from './support/concurrent-ingest';
import { runJobBatch, type JobBatchResult } from './support/job-batch';
import {
  appendBreakdown,
  scrapeMetrics,
  summed,
  type AppendBreakdown,
} from './support/server-metrics';
import { idleLatency, probeLatency, summarise, type Latencies } from './support/latency-probe';
import {
  ingestMeasuringMemory,
  type MemoryResult,
  type MemoryWay,
  type MemorySample,
} from './support/memory-ingest';
import { mib } from './support/process-memory';

const CLIENTS = 8;
const RUNS = 4; // two clients per run, each sending every other iteration
const STEPS_PER_CLIENT = Number(process.env.BENCH_SCALE_STEPS_PER_CLIENT ?? 30_000);
const MEMORY_STEPS = Number(process.env.BENCH_SCALE_MEMORY_STEPS ?? 1_000_000);
const HEAP_CAP_MIB = 160;

const API = { CREDITLAB_WORKER: 'false' };
const WORKER = { CREDITLAB_API: 'false', CREDITLAB_ESTIMATOR_THREADS: '1' };

let db: BenchDatabase | undefined;
const processes: ServerProcess[] = [];

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const p = await spawnServer({
    DATABASE_URL: (db as BenchDatabase).databaseUrl,
    LOG_LEVEL: 'warn',
    ...env,
  });
  processes.push(p);
  return p;
}

/** Every child stopped and the database with them, whatever ended the benchmark. */
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  return (cleaning ??= (async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await db?.close();
  })());
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

interface IngestPhase {
  label: string;
  processes: number;
  steps: number;
  seconds: number;
  latency: Latencies;
  /** Each run right after the phase, and again after a retried request went to the other process. */
  checks: RunCheck[];
  afterRetry: RunCheck[];
  runIds: string[];
  /** Where the clients' requests spent their time, from the API processes' /metrics. */
  breakdown: AppendBreakdown;
}

async function ingestPhase(label: string, urls: string[], seed: number): Promise<IngestPhase> {
  sampleLoad();
  const plan = planRequests(CLIENTS, RUNS, STEPS_PER_CLIENT, seed);
  const runIds: string[] = [];
  for (let r = 0; r < RUNS; r++) runIds.push(await createRun(urls[0] as string, `${label} ${r}`));
  const scrapeAll = async () => summed(await Promise.all(urls.map(scrapeMetrics)));
  const before = await scrapeAll();
  const probe = probeLatency(urls);
  // Clients 0–3 on the first process, 4–7 on the next: the two clients of a run on different ones.
  const urlOf = (c: number) => urls[Math.floor(c / RUNS) % urls.length] as string;
  const seconds = await runClients(plan, runIds, urlOf);
  const latency = summarise(await probe.stop());
  const breakdown = appendBreakdown(before, await scrapeAll());
  for (const id of runIds) await finishRun(urls[0] as string, id);
  const sentTo = (r: number) => plan.flat().filter((q) => q.run === r);
  const checks = await Promise.all(
    runIds.map((id, r) => checkRun((db as BenchDatabase).pool, id, sentTo(r), true)),
  );
  const steps = plan.flat().reduce((n, q) => n + q.steps, 0);
  console.log(
    `${label}: ${steps} steps in ${fmt(seconds, 1)} s = ${fmt(steps / seconds / 1000, 1)}k steps/s; runs query p50 ${fmt(latency.p50, 1)} ms, p95 ${fmt(latency.p95, 1)} ms`,
  );
  // A retried request sent to the other process: it must add nothing.
  if (urls.length > 1)
    for (let r = 0; r < RUNS; r++) {
      const first = plan[r]?.[0];
      if (first) await appendNdjson(urls[1] as string, runIds[r] as string, first.body);
    }
  const afterRetry = await Promise.all(
    runIds.map((id, r) => checkRun((db as BenchDatabase).pool, id, sentTo(r), true)),
  );
  return {
    label,
    processes: urls.length,
    steps,
    seconds,
    latency,
    checks,
    afterRetry,
    runIds,
    breakdown,
  };
}

type Memory = MemoryResult & { label: string };

/**
 * A fresh API process per way of sending, so that each VmHWM covers that ingest alone; the last
 * with V8's heap capped (--max-old-space-size): it finishes only if what the server keeps does not
 * grow with the run (garbage aside, which a full heap collects).
 */
async function memoryPhase(): Promise<Memory[]> {
  const results: Memory[] = [];
  const ways: (MemoryWay & { label: string; env: Record<string, string> })[] = [
    { requests: 'iteration', columnar: false, label: 'one request per iteration', env: {} },
    {
      requests: 'sender',
      columnar: true,
      requestBytes: 32 * 2 ** 20,
      label: "steps as columns, through the client's sender (requests of up to 32 MiB)",
      env: {},
    },
    { requests: 'stream', columnar: false, label: 'one streamed request', env: {} },
    {
      requests: 'stream',
      columnar: false,
      label: `one streamed request, V8 heap capped at ${HEAP_CAP_MIB} MiB`,
      env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MIB}` },
    },
  ];
  for (const way of ways) {
    const server = await start({ ...API, ...way.env });
    const r = {
      ...(await ingestMeasuringMemory(server, MEMORY_STEPS, way)),
      label: way.label,
    };
    const peaks = r.samples.map((x) => fmt(mib(x.peakBytes), 0)).join(' → ');
    console.log(
      `memory, ${r.label}: ${r.steps} steps; VmHWM ${fmt(mib(r.startBytes), 0)} → ${peaks} MiB`,
    );
    await server.stop();
    results.push(r);
  }
  return results;
}

const ms = (l: Latencies) =>
  `${fmt(l.p50, 1)} / ${fmt(l.p95, 1)} / ${fmt(l.max, 0)} ms (${l.count})`;
const once = (p: IngestPhase) =>
  p.checks.every(exactlyOnce) && p.afterRetry.every(exactlyOnce) ? 'yes' : '**NO**';

function ingestRow(p: IngestPhase): string {
  const events = p.checks.reduce((n, c) => n + c.eventsSent, 0);
  const b = p.breakdown;
  const perRequest = (seconds: number) => fmt(seconds * 1000, 1);
  return `| ${p.processes} | ${CLIENTS} clients, ${RUNS} runs | ${p.steps.toLocaleString('en')} (${events} events) | ${fmt(p.seconds, 1)} s | ${fmt(p.steps / p.seconds / 1000, 1)}k | ${ms(p.latency)} | ${perRequest(b.append)} / ${perRequest(b.phases.lock)} / ${perRequest(b.phases.connect)} ms (${b.requests}) | ${once(p)} |`;
}

function jobRow(workers: number, b: JobBatchResult): string {
  const ok = b.completed === b.jobs && b.perWorker.reduce((a, x) => a + x, 0) === b.iterations;
  return `| ${workers} | ${b.jobs} | ${b.iterations} | ${fmt(b.seconds, 1)} s | ${fmt(b.jobs / b.seconds, 2)} | ${fmt(b.iterations / b.seconds, 1)} | ${b.perWorker.join(' + ')} | ${b.turns} (${b.turnsRetried} retried) | ${ok ? 'yes' : '**NO**'} |`;
}

/** A row of the memory table, whose columns are at the steps of `columns` (the first row's samples). */
function memoryRow(m: Memory, columns: MemorySample[]): string {
  const size = (b: number) => `${fmt(mib(b), 0)}`;
  const thousands = (steps: number) => Math.round(steps / 1000);
  // A row sampled elsewhere (through the sender: as each request is answered) says where.
  const where = (x: MemorySample, k: number) => {
    const column = columns[k]?.steps ?? x.steps;
    return Math.abs(x.steps - column) <= 0.01 * column ? '' : ` (at ${thousands(x.steps)}k)`;
  };
  const at = (x: MemorySample, k: number) =>
    `${size(x.peakBytes)} / ${size(x.residentBytes)} / ${size(x.heapUsedBytes)}${where(x, k)}`;
  return `| ${m.label} | ${m.requests} | ${size(m.bytes)} MiB | ${size(m.startBytes)} | ${m.samples.map(at).join(' | ')} |`;
}

/** The machine's 1-minute load average, sampled at each phase: how shared the 2 cores were. */
const loads: number[] = [];
const sampleLoad = () => loads.push(loadavg()[0] as number);

function report(
  idle: Latencies,
  phases: IngestPhase[],
  jobs: JobBatchResult[],
  memory: Memory[],
): void {
  writeSection(
    'scale-out',
    `
## Scale-out rehearsal on one machine (\`npm run bench:scale\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:scale\` (\`BENCH_SCALE_STEPS_PER_CLIENT\`, default 30,000; \`BENCH_SCALE_MEMORY_STEPS\`, default 1,000,000).

One embedded PostgreSQL; two API processes (\`CREDITLAB_WORKER=false\`) and two job-worker processes
(\`CREDITLAB_API=false\`, one estimator thread each), all on the same \`DATABASE_URL\`, as
[scaling.md](scaling.md) describes. On two shared cores no speed-up can show: every process, the
clients and PostgreSQL compete for the same CPUs. What this measures is correctness across processes and
contention. The machine's 1-minute load average, sampled at each phase, was
${loads.map((l) => fmt(l, 1)).join(', ')} (2 means both cores busy; the load measured here is part of it): the absolute rates
vary with what else the machine does, from run to run.

**Ingest.** ${CLIENTS} clients at once, each sending iteration-sized NDJSON requests, steps as objects (16 tasks × 8 rollouts of up to
50 steps) one after the other; ${RUNS} runs, each written by two clients taking turns at its iterations, so that with
two processes two processes append to one run at once. "Runs query" is \`{ runs(first: 20) { … } }\` sent
meanwhile, one at a time, to the same processes (p50 / p95 / max, number sent); idle, before any load:
${ms(idle)}. "Exactly once": for every run, each event sent is stored once (by its id), the run holds no
other events than \`run.created\` and \`run.finished\`, seq runs 1..n without a gap and equals the run's
\`last_seq\`, and the steps stored equal the steps sent; checked again after the first request of every run
was sent a second time, to the other process (a client's retry): nothing was added. "Appends" is where the
clients' requests spent their time in the server (\`creditlab_append_phase_seconds\` of the API processes, means
per request, number of requests): all of it, then the part spent waiting for the run's lock (the other client of
the run appending) and for a connection of the ingest pool.

| API processes | load | steps | wall time | steps/s | runs query p50 / p95 / max | appends: in all / run's lock / connection | exactly once |
|---:|---|---:|---:|---:|---:|---:|---|
${phases.map(ingestRow).join('\n')}

**Recompute jobs.** One GiGPO job per run (the ${phases.length * RUNS} runs above, every iteration), queued through an API
process, done by one worker, then (another γ, so nothing is reused) by two. "Per worker": iterations each
worker estimated (its \`creditlab_estimator_seconds_count\`); their sum equals the iterations asked for, so no
iteration was estimated twice. "Queue turns": pg-boss jobs (a job re-queues itself every
\`CREDITLAB_RECOMPUTE_TURN_MS\`); "retried": turns taken again after a start (none means no turn ran twice).
"Done once": every job completed with \`done\` = its iterations and exactly that many stored iterations in its set.

| workers | jobs | iterations | wall time | jobs/s | iterations/s | per worker | queue turns | done once |
|---:|---:|---:|---:|---:|---:|---|---:|---|
${jobs.map((b, k) => jobRow(k + 1, b)).join('\n')}

**Memory.** A freshly started API process per row; ${(memory[0]?.steps ?? 0).toLocaleString('en')} steps into one run
(one client; steps as objects unless the row says columns), as iteration-sized requests, through the TypeScript client's background sender
fed as fast as iterations are made (it joins them into requests of up to 32 MiB: the way the ingest goal is met), or as one request streamed iteration by iteration. Each cell is
peak resident / resident now / V8 heap in use, in MiB, once that many steps were sent (through the sender: once the
request that holds them was answered, its steps in parentheses): the peak is \`VmHWM\` of
\`/proc/<pid>/status\` (the estimator threads are threads of the same process), the heap is
\`nodejs_heap_size_used_bytes\` from the server's \`/metrics\`. The last row runs the server with V8's heap capped
(\`NODE_OPTIONS=--max-old-space-size=${HEAP_CAP_MIB}\`): it can finish only if what the server keeps stays below that,
whatever the size of the run or the request.

| sent as | requests | NDJSON | peak after start-up | ${(memory[0]?.samples ?? []).map((x) => `at ${Math.round(x.steps / 1000)}k steps`).join(' | ')} |
|---|---:|---:|---:|${(memory[0]?.samples ?? []).map(() => '---:').join('|')}|
${memory.map((m) => memoryRow(m, memory[0]?.samples ?? [])).join('\n')}
`,
  );
}

async function main(): Promise<void> {
  db = await startBenchDatabase();
  const api1 = await start(API);
  const api2 = await start(API);
  const worker1 = await start(WORKER);
  const idle = summarise(await idleLatency(api1.url, 100));
  const phases = [
    await ingestPhase('one process', [api1.url], 1_000),
    await ingestPhase('two processes', [api1.url, api2.url], 100_000),
  ];
  const runIds = phases.flatMap((p) => p.runIds);
  const gigpo = (gamma: number) => ({ name: 'gigpo', params: { gamma } });
  sampleLoad();
  const jobs = [await runJobBatch(db.pool, api1.url, [worker1.url], runIds, gigpo(0.9))];
  const worker2 = await start(WORKER);
  sampleLoad();
  jobs.push(await runJobBatch(db.pool, api1.url, [worker1.url, worker2.url], runIds, gigpo(0.91)));
  for (const b of jobs)
    console.log(`jobs: ${b.jobs} in ${fmt(b.seconds, 1)} s; per worker ${b.perWorker.join(' + ')}`);
  await Promise.all([api2.stop(), worker1.stop(), worker2.stop()]);
  sampleLoad();
  const memory = await memoryPhase();
  report(idle, phases, jobs, memory);
  console.log('wrote docs/benchmarks.md');
  const failed = phases.some((p) => once(p) !== 'yes') || jobs.some((b) => b.completed !== b.jobs);
  if (failed) throw new Error('exactly-once checks failed: see docs/benchmarks.md');
}

main()
  .catch((e: unknown) => {
    if (!cleaning) console.error(e); // after a signal, what failed is only the stopped servers
    process.exitCode = 1;
  })
  .finally(() => cleanUp());
