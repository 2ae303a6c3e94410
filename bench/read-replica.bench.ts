/**
 * `npm run bench:replica`: what a read replica (CREDITLAB_READ_REPLICA_URL) takes off the primary,
 * and how far behind it runs, on this one machine. A primary and a hot standby streaming from it
 * (both embedded PostgreSQL, made as test/support/replicated-postgres.ts makes them); two API
 * processes on the primary, one of them reading GraphQL queries from the standby. A dashboard's
 * query (the runs page, and one iteration's steps) is sent through each in turn: the primary's CPU
 * per query through either is the saving, measured in the same run. Then 8 clients ingest while
 * the same queries go on, and the standby's replay lag is sampled from pg_stat_replication; after
 * the last append, how long until the standby has it all, and whether both processes then answer
 * the query with the same data. Writes docs/benchmarks.md.
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { removePrivateDirectories } from '../test/support/private-postgres';
import {
  startReplicatedPostgres,
  type ReplicatedPostgres,
} from '../test/support/replicated-postgres';
import { spawnServer, type ServerProcess } from '../test/support/test-server';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { appendNdjson, createRun, planRequests, runClients } from './support/concurrent-ingest';
import { cpuSeconds, databaseCpu, databaseCpuSince } from './support/database-cost';
import { summarise, timedQuery, type Latencies } from './support/latency-probe';

const CLIENTS = 8;
const RUNS = 4;
const STEPS_PER_CLIENT = Number(process.env.BENCH_REPLICA_STEPS_PER_CLIENT ?? 90_000);
const QUERIES = Number(process.env.BENCH_REPLICA_QUERIES ?? 200);

/** What a dashboard asks while trainers upload: the runs page, and the steps of one iteration. */
const RUNS_PAGE = '{ runs(first: 20) { nodes { id name status lastSeq iterationCount } } }';
const ITERATION_STEPS = `query ($id: ID!) { run(id: $id) { lastSeq groups(iteration: 0) { nodes { id
  trajectories { id return steps { index reward state action } } } } } }`;

interface Query {
  label: string;
  body: string;
}

const timed = (url: string, q: Query) => timedQuery(url, q.body, q.label);

interface Lag {
  bytes: number;
  replayMs: number;
}

/** The standby's distance from the primary now (pg_stat_replication, on the primary). */
async function lagNow(primary: pg.Client): Promise<Lag> {
  const res = await primary.query<{ bytes: string | null; replay_ms: number | null }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::text AS bytes,
            (extract(epoch FROM replay_lag) * 1000)::float8 AS replay_ms
       FROM pg_stat_replication LIMIT 1`,
  );
  const row = res.rows[0];
  return { bytes: Number(row?.bytes ?? 0), replayMs: row?.replay_ms ?? 0 };
}

async function main(): Promise<void> {
  let pair: ReplicatedPostgres | undefined;
  const servers: ServerProcess[] = [];
  let primary: pg.Client | undefined;
  try {
    pair = await startReplicatedPostgres('creditlab');
    const start = async (env: Record<string, string>) => {
      const s = await spawnServer({
        DATABASE_URL: (pair as ReplicatedPostgres).primaryUrl,
        CREDITLAB_WORKER: 'false',
        LOG_LEVEL: 'warn',
        ...env,
      });
      servers.push(s);
      return s;
    };
    const onPrimary = await start({});
    const onReplica = await start({ CREDITLAB_READ_REPLICA_URL: pair.replicaUrl });
    primary = new pg.Client({ connectionString: pair.primaryUrl });
    await primary.connect();
    const primaryDir = pair.primaryDataDir;

    // The runs the clients write, each with a first iteration already there for the steps query.
    const plan = planRequests(CLIENTS, RUNS, STEPS_PER_CLIENT, 7);
    const runIds = await Promise.all(
      Array.from({ length: RUNS }, (_, r) => createRun(onPrimary.url, `replica ${r}`)),
    );
    // The run whose steps the dashboard shows: one iteration, written before anything is measured.
    const shown = await createRun(onPrimary.url, 'replica shown');
    await appendNdjson(onPrimary.url, shown, planRequests(1, 1, 1, 99_000)[0]![0]!.body);
    const queries: Query[] = [
      { label: 'runs page', body: JSON.stringify({ query: RUNS_PAGE }) },
      {
        label: "one iteration's steps",
        body: JSON.stringify({ query: ITERATION_STEPS, variables: { id: shown } }),
      },
    ];
    while ((await lagNow(primary)).bytes > 0) await new Promise((r) => setTimeout(r, 50));

    // Idle: the same queries through each process in turn; the primary's CPU per query.
    const idle: { label: string; via: string; latency: Latencies; primaryCpuMs: number }[] = [];
    for (const q of queries)
      for (const [via, server] of [
        ['the primary', onPrimary],
        ['the replica', onReplica],
      ] as const) {
        for (let k = 0; k < 20; k++) await timed(server.url, q); // warm-up
        const before = await databaseCpu(primaryDir);
        const times: number[] = [];
        for (let k = 0; k < QUERIES; k++) times.push((await timed(server.url, q)).ms);
        const cpu = await databaseCpuSince(primaryDir, before);
        idle.push({
          label: q.label,
          via,
          latency: summarise(times),
          primaryCpuMs: (cpu * 1000) / QUERIES,
        });
        console.log(
          `idle, ${q.label} via ${via}: p50 ${fmt(summarise(times).p50)} ms, primary CPU ${fmt((cpu * 1000) / QUERIES)} ms per query`,
        );
      }

    // Under ingest: the 8 clients split between the two processes (ingest writes the primary from
    // either), so that both carry the same load and their queries differ only in where they read.
    const lags: Lag[] = [];
    const underLoad = new Map<string, number[]>();
    let ingesting = true;
    const sampling = (async () => {
      while (ingesting) {
        lags.push(await lagNow(primary as pg.Client));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const probing = (async () => {
      for (let k = 0; ingesting; k++) {
        const q = queries[Math.floor(k / 2) % queries.length] as Query;
        const [via, server] = k % 2 === 0 ? ['the primary', onPrimary] : ['the replica', onReplica];
        const key = `${q.label} via ${via}`;
        underLoad.set(key, [...(underLoad.get(key) ?? []), (await timed(server.url, q)).ms]);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const load = loadavg()[0] as number;
    const steps = plan.flat().reduce((n, r) => n + r.steps, 0);
    const serversCpu = async () =>
      (await cpuSeconds(onPrimary.process.pid as number)) +
      (await cpuSeconds(onReplica.process.pid as number));
    const serverCpu0 = await serversCpu();
    const wall = await runClients(plan, runIds, (c) => (c % 2 === 0 ? onPrimary : onReplica).url);
    const ingestCpu = (await serversCpu()) - serverCpu0;
    const ended = performance.now();
    ingesting = false;
    await Promise.all([sampling, probing]);
    while ((await lagNow(primary)).bytes > 0) await new Promise((r) => setTimeout(r, 10));
    const caughtUpMs = performance.now() - ended;
    const [a, b] = await Promise.all([
      timed(onPrimary.url, queries[1] as Query),
      timed(onReplica.url, queries[1] as Query),
    ]);
    const same = JSON.stringify(a.data) === JSON.stringify(b.data);
    const bytes = summarise(lags.map((l) => l.bytes));
    const replay = summarise(lags.map((l) => l.replayMs));
    console.log(
      `ingest ${steps} steps in ${fmt(wall)} s; lag p50 ${bytes.p50} B max ${bytes.max} B, replay_lag max ${fmt(replay.max)} ms; caught up ${fmt(caughtUpMs)} ms after; same answer: ${same}`,
    );

    const idleRows = idle.map(
      (r) =>
        `| ${r.label} | ${r.via} | ${fmt(r.latency.p50)} / ${fmt(r.latency.p95)} ms | ${fmt(r.primaryCpuMs)} ms |`,
    );
    const loadRows = [...underLoad.entries()].map(([key, ms]) => {
      const s = summarise(ms);
      return `| ${key} | ${fmt(s.p50)} / ${fmt(s.p95)} / ${fmt(s.max)} ms (${s.count}) |`;
    });
    const kib = (n: number) => fmt(n / 1024);
    writeSection(
      'read-replica',
      `
## A read replica for queries (\`npm run bench:replica\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}; load average ${fmt(load)} (1 min) when the ingest began.
Command: \`npm run bench:replica\` (\`BENCH_REPLICA_STEPS_PER_CLIENT\`, default 90,000; \`BENCH_REPLICA_QUERIES\`, default 200).

A primary and a hot standby streaming from it, both embedded PostgreSQL on this machine (the standby made as
\`test/support/replicated-postgres.ts\` makes it), and two API processes on the primary, one of them with
\`CREDITLAB_READ_REPLICA_URL\` naming the standby ([scaling.md](scaling.md#3-read-replicas-for-queries)). The same
GraphQL queries through each: the runs page (\`${RUNS_PAGE}\`), and one iteration's steps of a run (16 groups, 128
trajectories, about 1,500 steps, with their texts). On one machine of two cores the standby's replay and queries
share the CPUs with the primary, so what this shows is what queries cost the primary, how far behind the standby
runs, and that it answers the same.

**Idle**, ${QUERIES} of each query one after the other (after 20 not counted): latency p50 / p95, and the primary's CPU
per query (every process of the primary, from /proc):

| query | read from | latency | primary's CPU per query |
|---|---|---:|---:|
${idleRows.join('\n')}

**Under ingest.** ${CLIENTS} clients send ${steps.toLocaleString('en')} steps to ${RUNS} runs (iteration-sized requests of steps as objects,
one after the other each), half of them through each process, so that both carry the same load (ingest writes the
primary either way), in ${fmt(wall)} s (${fmt(steps / wall / 1000)}k steps/s; the two processes' CPU ${fmt((ingestCpu * 1e6) / steps)} µs per step, queries
included); meanwhile the queries go to the two processes in turn (p50 / p95 / max, number sent):

| query | latency |
|---|---:|
${loadRows.join('\n')}

The standby's distance from the primary, sampled every 100 ms during the ingest (\`pg_stat_replication\`; ${bytes.count}
samples): WAL not yet replayed p50 ${kib(bytes.p50)} KiB, p95 ${kib(bytes.p95)} KiB, max ${kib(bytes.max)} KiB; \`replay_lag\` p50
${fmt(replay.p50)} ms, max ${fmt(replay.max)} ms. After the last append's answer the standby had replayed everything ${fmt(caughtUpMs)} ms
later, and the steps query then answered ${same ? 'the same' : 'differently (a bug)'} through both processes.
`,
    );
  } finally {
    await primary?.end().catch(() => undefined);
    for (const s of servers) await s.stop();
    await pair?.stop();
    await removePrivateDirectories();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
