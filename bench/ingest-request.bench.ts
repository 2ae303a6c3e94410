/**
 * `npm run bench:ingest-request`: what one append request costs whatever it holds, against what it
 * costs per step. Requests are sent one after the other, each answer awaited (as a trainer that
 * logs each iteration and waits), each one iteration of one trajectory of 1, 100 or 1,500 steps as
 * columns, or bench:ingest's iteration of 16 groups and 128 trajectories, to a server process on a
 * fresh embedded PostgreSQL. For each: the wall time, the server
 * process's CPU and the database's (every PostgreSQL process), per request, from /proc. Baselines in
 * the same run: `GET /healthz` (the HTTP floor: no key, no log line, no database) and the run's
 * checkpoint list (an authenticated, logged request that reads the database once). Writes its
 * section of docs/benchmarks.md.
 */
import { rolloutEvents } from '@creditlab/client';
import { createRun } from './support/bench-run';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { cpuSeconds, databaseCpu, databaseCpuSince } from './support/database-cost';
import { ADMIN_KEY } from '../test/support/test-server';
import { BENCH_ITERATION } from './support/synthetic-ingest';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';

const REQUESTS = Number(process.env.BENCH_INGEST_REQUEST_COUNT ?? 300);
const PASSES = Number(process.env.BENCH_INGEST_REQUEST_PASSES ?? 3);
const SIZES = [1, 100, 1500];
const WARM_UP = 20;

interface Scenario {
  label: string;
  steps: number;
  /** A new run's requests, in order (the run is made here, so each pass starts a fresh one). */
  requests(url: string): Promise<(() => Promise<void>)[]>;
}

/** Per request, medians over the passes. */
interface Cost {
  wallMs: number;
  /** This process's CPU: the client's part (fetch sending the body, reading the answer). */
  clientMs: number;
  serverMs: number;
  databaseMs: number;
}

async function send(url: string, init: RequestInit = {}): Promise<void> {
  const res = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(init.headers as Record<string, string>) },
  });
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** An iteration of one trajectory of `steps` steps, with an agent's long, recurring states. */
function iterationBody(iteration: number, steps: number): string {
  const trajectory = Array.from({ length: steps }, (_, i) => ({
    state: `[task ${iteration % 16}] You are in room ${i % 37}. ${'You see a door. '.repeat(8)}`,
    action: `go to room ${(i + 1) % 37}`,
    reward: i === steps - 1 ? 1 : 0,
    nll: 0.25 + (i % 7) / 10,
    value: (i % 11) / 10,
  }));
  const batch = {
    groups: [
      { id: `g${iteration}`, trajectories: [{ id: `g${iteration}/t0`, steps: trajectory }] },
    ],
  };
  const events = rolloutEvents(iteration, batch, 100_000, { columnar: true });
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n';
}

/** bench:ingest's iteration (16 groups of 8 trajectories, about 1,500 steps, new texts) as columns. */
function benchIterationBody(iteration: number): string {
  const batch = syntheticBatchJson(BENCH_ITERATION, 1000 + iteration);
  const events = rolloutEvents(iteration, batch, 100_000, { columnar: true });
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n';
}

/** The steps of a body made by benchIterationBody (they vary a little from one iteration to the next). */
const BENCH_ITERATION_STEPS = 1500;

/** Appends of `body(i)` to a new run, one per request. */
function appends(body: (iteration: number) => string, name: string) {
  return async (url: string) => {
    const runId = await createRun(url, name);
    const events = `${url}/v1/runs/${runId}/events`;
    return Array.from({ length: WARM_UP + REQUESTS }, (_, i) => {
      const text = body(i);
      return () =>
        send(events, {
          method: 'POST',
          headers: { 'content-type': 'application/x-ndjson' },
          body: text,
        });
    });
  };
}

function scenarios(): Scenario[] {
  const count = WARM_UP + REQUESTS;
  return [
    {
      label: '`GET /healthz` (baseline: the HTTP floor)',
      steps: 0,
      requests: (url) =>
        Promise.resolve(Array.from({ length: count }, () => () => send(`${url}/healthz`))),
    },
    {
      label: "`GET` the run's checkpoints (baseline: an authenticated read)",
      steps: 0,
      requests: async (url) => {
        const runId = await createRun(url, 'bench request baseline');
        const list = `${url}/v1/runs/${runId}/checkpoints`;
        return Array.from({ length: count }, () => () => send(list));
      },
    },
    ...SIZES.map((steps): Scenario => ({
      label: `append, one trajectory of ${steps.toLocaleString('en')} step${steps === 1 ? '' : 's'}`,
      steps,
      requests: appends((i) => iterationBody(i, steps), `bench request ${steps}`),
    })),
    {
      label: "append, bench:ingest's iteration: 16 groups of 8 trajectories, about 1,500 steps",
      steps: BENCH_ITERATION_STEPS,
      requests: appends(benchIterationBody, 'bench request iteration'),
    },
  ];
}

async function main(): Promise<void> {
  const bench = await startBenchServer({});
  const all = scenarios();
  const samples = all.map(() => [] as Cost[]);
  try {
    const url = bench.server.url;
    const pid = bench.server.process.pid as number;
    // Passes take the scenarios in turn, so that a slow spell of the machine touches them all.
    for (let pass = 0; pass < PASSES; pass++)
      for (const [k, s] of all.entries()) {
        const requests = await s.requests(url);
        for (const r of requests.slice(0, WARM_UP)) await r();
        const server0 = await cpuSeconds(pid);
        const database0 = await databaseCpu(bench.pgDataDir);
        const client0 = process.cpuUsage();
        const t0 = performance.now();
        for (const r of requests.slice(WARM_UP)) await r();
        const wall = performance.now() - t0;
        const used = process.cpuUsage(client0);
        const client = (used.user + used.system) / 1000; // ms
        const server = (await cpuSeconds(pid)) - server0;
        // Per process since the start: one that ended meanwhile (autovacuum) takes nothing off.
        const database = await databaseCpuSince(bench.pgDataDir, database0);
        const n = requests.length - WARM_UP;
        samples[k]?.push({
          wallMs: wall / n,
          clientMs: client / n,
          serverMs: (server * 1000) / n,
          databaseMs: (database * 1000) / n,
        });
        console.log(
          `pass ${pass + 1} ${s.label}: ${fmt(wall / n)} ms per request, client CPU ${fmt(client / n)} ms, server CPU ${fmt((server * 1000) / n)} ms, database CPU ${fmt((database * 1000) / n)} ms`,
        );
      }
  } finally {
    await bench.close();
  }
  const cost = samples.map((xs): Cost => ({
    wallMs: median(xs.map((x) => x.wallMs)),
    clientMs: median(xs.map((x) => x.clientMs)),
    serverMs: median(xs.map((x) => x.serverMs)),
    databaseMs: median(xs.map((x) => x.databaseMs)),
  }));
  const read = cost[1] as Cost;
  const rows = all.map((s, k) => {
    const c = cost[k] as Cost;
    return `| ${s.label} | ${fmt(c.wallMs)} ms | ${fmt(c.clientMs)} ms | ${fmt(c.serverMs)} ms | ${fmt(c.databaseMs)} ms | ${fmt((c.clientMs + c.serverMs + c.databaseMs) / c.wallMs, 2)} | ${fmt(c.serverMs / read.serverMs, 1)} |`;
  });
  const at = (steps: number) =>
    cost[all.findIndex((s) => s.steps === steps && s.label.startsWith('append, one'))] as Cost;
  const [one, most] = [at(1), at(1500)];
  const shaped = cost[all.length - 1] as Cost;
  const perStep = (x: keyof Cost) => ((most[x] - one[x]) / 1499) * 1000;
  writeSection(
    'ingest-request',
    `
## What one append request costs, whatever it holds (\`npm run bench:ingest-request\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:ingest-request\` (\`BENCH_INGEST_REQUEST_COUNT\`, default 300 requests per pass;
\`BENCH_INGEST_REQUEST_PASSES\`, default 3).

Requests sent one after the other to a server process on a fresh embedded PostgreSQL, each answer awaited (a
trainer that logs each iteration and waits), each append one iteration as columns (of one trajectory, or, in the
last row, bench:ingest's), a new run per pass. Per request, medians over ${PASSES} passes of ${REQUESTS} (after ${WARM_UP} not counted): the wall time, the
client's CPU (this process: fetch sending the body and reading the answer; the bodies are made before), the
server process's CPU and the database's (every PostgreSQL process), from /proc, and the three CPUs together over
the wall time (above 1 only where two of them work at once). The baselines, in the same run:
\`GET /healthz\` (no key, no log line, no database) and the run's checkpoint list (a key checked, a log line, one
read of the database); the last column is the server's CPU per request over the latter's.

| request | wall | client CPU | server CPU | database CPU | CPU ÷ wall | server CPU ÷ an authenticated read |
|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

So an append of one step costs the server ${fmt(one.serverMs)} ms and the database ${fmt(one.databaseMs)} ms, and each step
more adds about ${fmt(perStep('serverMs'))} µs and ${fmt(perStep('databaseMs'))} µs (from the 1- and 1,500-step rows): at
1,500 steps a request, ${fmt((100 * one.serverMs) / most.serverMs, 0)} % of the server's CPU for it is the part a request costs whatever it
holds. The last row is about as many steps as bench:ingest's iteration sends them (tasks of 8 rollouts over 20
recurring states, new to the run each iteration, of about 120 characters; token log-probs, next states and values
besides): ${fmt(shaped.wallMs - most.wallMs)} ms more per request than one trajectory of 1,500 steps, ${fmt(shaped.serverMs - most.serverMs)} ms of it the
server's CPU and ${fmt(shaped.databaseMs - most.databaseMs)} ms the database's. About half of that is its 16 groups and 128 trajectories (the same
steps sent as one trajectory: the earlier analysis under "Where the ingest goal stands"), the rest its new texts and
fuller steps. For that iteration the client, the server and the database used ${fmt(shaped.clientMs + shaped.serverMs + shaped.databaseMs)} ms of CPU
in all per request of ${fmt(shaped.wallMs)} ms ([compared with the logical COPY](#awaited-requests-on-two-cores)).
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
