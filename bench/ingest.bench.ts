/**
 * `npm run bench:ingest`: streams a synthetic run through POST /v1/runs/{id}/events
 * of a real server process, and in the same run, on the same database, loads
 * the very rows the server wrote with a plain COPY from a file (into a copy of
 * the steps table without foreign keys or triggers): the ceiling. Writes steps/s
 * for both and their ratio to docs/benchmarks.md, without and with
 * 256-dimensional embeddings.
 */
import { rolloutEvents } from '@creditlab/client';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import {
  generateRollouts,
  JsonBatchSink,
} from '../libs/estimators/test/support/synthetic-rollouts';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { postNdjsonStream } from './support/post-ndjson';
import { ADMIN_KEY } from '../test/support/test-server';

const STEPS = Number(process.env.BENCH_INGEST_STEPS ?? 1_000_000);
const EMBEDDED_STEPS = Number(process.env.BENCH_INGEST_EMBEDDING_STEPS ?? 200_000);
const TASKS_PER_ITERATION = 16; // 16 tasks × G = 8 rollouts × ≤ 50 steps per request, as a trainer sends them

interface Scenario {
  label: string;
  steps: number;
  embeddingDim: number;
}

interface Result extends Scenario {
  requests: number;
  bytes: number;
  httpSeconds: number;
  copySeconds: number;
  distinctTexts: number;
}

/** Writes one NDJSON file per iteration-sized request; returns their paths and total size. */
async function writeRequests(
  dir: string,
  s: Scenario,
): Promise<{ files: string[]; bytes: number }> {
  const files: string[] = [];
  let bytes = 0;
  let sink = new JsonBatchSink();
  let groupsInIteration = 0;
  const flush = async () => {
    if (groupsInIteration === 0) return;
    const file = path.join(dir, `${s.label}-${files.length}.ndjson`);
    const out = createWriteStream(file);
    for (const e of rolloutEvents(files.length, sink.batch, 2000))
      out.write(`${JSON.stringify(e)}\n`);
    await new Promise((r) => out.end(r));
    bytes += (await stat(file)).size;
    files.push(file);
    sink = new JsonBatchSink();
    groupsInIteration = 0;
  };
  // Route the generator's groups into per-iteration batches.
  const router = {
    beginGroup: (id: string) => sink.beginGroup(id),
    beginTrajectory: (id: string, o?: 'success' | 'failure' | 'truncated') =>
      sink.beginTrajectory(id, o),
    addStep: (step: Parameters<JsonBatchSink['addStep']>[0]) => sink.addStep(step),
    endTrajectory: () => undefined,
    endGroup: () => {
      groupsInIteration++;
    },
  };
  let written = 0;
  let seed = 1;
  while (written < s.steps) {
    generateRollouts(
      router,
      {
        groups: TASKS_PER_ITERATION,
        groupSize: 8,
        maxSteps: 50,
        statesPerGroup: 20,
        textLength: 200,
        embeddingDim: s.embeddingDim || 8,
        withoutEmbeddings: s.embeddingDim === 0,
      },
      seed++,
    );
    written += sink.batch.groups.reduce(
      (n, g) => n + g.trajectories.reduce((m, t) => m + t.steps.length, 0),
      0,
    );
    await flush();
  }
  return { files, bytes };
}

const postFile = (url: string, file: string, size: number) =>
  postNdjsonStream(url, createReadStream(file), size);

async function runScenario(
  s: Scenario,
  serverUrl: string,
  db: pg.Pool,
  dir: string,
): Promise<Result> {
  const { files, bytes } = await writeRequests(dir, s);
  const created = await fetch(`${serverUrl}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ name: `bench ${s.label}`, env: 'synthetic', method: 'gigpo' }),
  });
  if (!created.ok) throw new Error(`creating the run: ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const t0 = performance.now();
  for (const f of files)
    await postFile(`${serverUrl}/v1/runs/${id}/events`, f, (await stat(f)).size);
  const httpSeconds = (performance.now() - t0) / 1000;
  const steps = Number(
    (await db.query('SELECT count(*) FROM steps WHERE run_id = $1', [id])).rows[0].count,
  );
  const distinctTexts = Number(
    (await db.query('SELECT count(*) FROM texts WHERE run_id = $1', [id])).rows[0].count,
  );

  // The ceiling: the same rows, from a file, with one COPY into a bare copy of the table.
  const rowsFile = path.join(dir, `${s.label}-steps.copy`);
  const client = await db.connect();
  try {
    await pipeline(
      client.query(copyTo(`COPY (SELECT * FROM steps WHERE run_id = '${id}') TO STDOUT`)),
      createWriteStream(rowsFile),
    );
    await client.query('DROP TABLE IF EXISTS steps_ceiling');
    await client.query(
      'CREATE TABLE steps_ceiling (LIKE steps INCLUDING DEFAULTS INCLUDING INDEXES)',
    );
    const t1 = performance.now();
    await pipeline(
      createReadStream(rowsFile),
      client.query(copyFrom('COPY steps_ceiling FROM STDIN')),
    );
    const copySeconds = (performance.now() - t1) / 1000;
    await client.query('DROP TABLE steps_ceiling');
    for (const f of [...files, rowsFile]) await rm(f);
    return { ...s, steps, requests: files.length, bytes, httpSeconds, copySeconds, distinctTexts };
  } finally {
    client.release();
  }
}

async function main(): Promise<void> {
  const bench = await startBenchServer({});
  const { server, pool: db, dir } = bench;
  const results: Result[] = [];
  try {
    for (const s of [
      { label: 'no-embeddings', steps: STEPS, embeddingDim: 0 },
      { label: 'embeddings-256', steps: EMBEDDED_STEPS, embeddingDim: 256 },
    ]) {
      const r = await runScenario(s, server.url, db, dir);
      results.push(r);
      console.log(
        `${r.label}: ${r.steps} steps; HTTP ${fmt(r.steps / r.httpSeconds / 1000, 1)}k steps/s; COPY ${fmt(r.steps / r.copySeconds / 1000, 1)}k steps/s`,
      );
    }
  } finally {
    await bench.close();
  }
  const rows = results.map((r) => {
    const http = r.steps / r.httpSeconds;
    const copy = r.steps / r.copySeconds;
    return `| ${r.label} | ${r.steps.toLocaleString('en')} | ${r.requests} | ${fmt(r.bytes / r.steps, 0)} B | ${fmt(http / 1000, 1)}k | ${fmt(r.bytes / r.httpSeconds / 2 ** 20, 1)} MiB/s | ${fmt(copy / 1000, 1)}k | ${fmt(http / copy)} |`;
  });
  writeSection(
    'ingest',
    `
## Ingest (\`npm run bench:ingest\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:ingest\` (\`BENCH_INGEST_STEPS\`, default 1,000,000; \`BENCH_INGEST_EMBEDDING_STEPS\`, default 200,000).

A synthetic run (tasks of G = 8 rollouts of up to 50 steps over 20 recurring states, observations of about
200 characters, NLL, critic value and sometimes token log-probs on every step) is written as NDJSON, one
request per iteration of 16 tasks, and streamed through \`POST /v1/runs/{id}/events\` of a server process on
an embedded PostgreSQL, one request after the other (each all-or-nothing). "HTTP" is end to end: parsing,
validation, the text dictionary, groups and trajectories, event rows and the COPY of the steps, commit. "COPY
ceiling" loads the very step rows the server wrote, from a file, with one plain \`COPY\` into a copy of the
steps table without foreign keys or triggers, in the same database right after.

| scenario | steps | requests | NDJSON per step | HTTP steps/s | HTTP throughput | COPY ceiling steps/s | HTTP ÷ COPY |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
