/**
 * `npm run bench:ingest-server`: the server's own CPU work per ingested step, without the database,
 * HTTP or other threads: the NDJSON request bodies of bench:ingest's synthetic run cut into lines and
 * parsed (`ndjsonEvents`, fed in 64 KB chunks as a socket delivers them; JSON.parse of the lines
 * alone is the baseline of the same run), checked and turned into the log's body and digest (`prepareEvent`),
 * then cut into trajectory slices and written as the binary COPY rows of `step_slices`
 * (StepSliceRows), each in this process, through the server's own modules. Each phase's time is the
 * least over several passes over the same lines (the first two are warm-up), which the machine's
 * other load disturbs far less than a sum. Writes its section of docs/benchmarks.md.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { deserialize, serialize } from 'node:v8';
import { prepareEvent } from '../apps/server/src/rollouts/append-session';
import { withoutWireColumns } from '../apps/server/src/rollouts/prepare-event';
import { BODY_LINES } from '../apps/server/src/rollouts/event-origin';
import { embeddingsAfter, embeddingsInBody } from '../apps/server/src/rollouts/event-body';
import { ndjsonEvents } from '../apps/server/src/rollouts/ndjson-source';
import { slicesOf } from '../apps/server/src/rollouts/run-projector';
import { StepSliceRows } from '../apps/server/src/rollouts/step-slice-rows';
import { TextDictionary } from '../apps/server/src/rollouts/text-dictionary';
import { benchCommand, fmt, machineLine, writeSection } from './support/bench-report';
import { writeRequests, type IngestScenario } from './support/ingest-requests';

const STEPS = Number(process.env.BENCH_INGEST_SERVER_STEPS ?? 100_000);
const EMBEDDED_STEPS = Number(process.env.BENCH_INGEST_SERVER_EMBEDDING_STEPS ?? 20_000);
const PASSES = Number(process.env.BENCH_INGEST_SERVER_PASSES ?? 10);
const WARM_UP_PASSES = 2;

const PHASES = ['parse', 'read', 'prepare', 'back', 'rows'] as const;
type Phase = (typeof PHASES)[number];
type Times = Record<Phase, number>;

interface Result {
  label: string;
  steps: number;
  /** Least nanoseconds per pass of each phase. */
  best: Times;
  /**
   * The process's CPU per pass (every phase, parse included), all threads, the median over the
   * passes: what the least wall times miss, garbage collection on V8's helper threads and the
   * system calls of allocation.
   */
  processCpu: number;
}

/** Where the slices' rows go; the bench has no run, so every slice is the first of its trajectory. */
const PLACE = { iteration: 0, groupOrd: 0, ord: 0 };
/** A text dictionary never asked to save: ids are computed in memory, as ingest computes them. */
const noDatabase = undefined as never;

/** The server's limits, far from reached here. */
const LIMITS = { maxLineBytes: 1 << 30, maxRequestBytes: 1 << 30, idleMs: 60_000 };
const CHUNK_BYTES = 64 * 1024;

/** Nanoseconds to cut the request bodies into lines and parse them, as the server reads a request. */
async function readPass(bodies: Buffer[]): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (const bytes of bodies) {
    const body = Object.assign(new PassThrough(), { complete: true });
    const events = ndjsonEvents(body as unknown as IncomingMessage, LIMITS);
    for (let at = 0; at < bytes.length; at += CHUNK_BYTES)
      body.write(bytes.subarray(at, at + CHUNK_BYTES));
    body.end();
    for await (const _event of events);
  }
  return Number(process.hrtime.bigint() - t0);
}

function onePass(lines: string[], runIdBytes: Buffer, runId: string): Times & { steps: number } {
  const times: Times = { parse: 0, read: 0, prepare: 0, back: 0, rows: 0 };
  // A new dictionary per pass, as a request has one. Ids come from the process's text-id cache, warm
  // after the first pass, as for a run whose texts recur (bench:ingest's: 99.5 % of a request's).
  const texts = new TextDictionary(noDatabase, runId);
  let steps = 0;
  for (const [position, line] of lines.entries()) {
    const t0 = process.hrtime.bigint();
    const value: unknown = JSON.parse(line);
    const t1 = process.hrtime.bigint();
    const prepared = prepareEvent({ position, value }, 'client', BODY_LINES);
    const { event } = prepared;
    const t2 = process.hrtime.bigint();
    // What the request's thread pays to take an event the preparing thread made: postMessage's
    // structured clone of what the thread sends, read back (the copy's other half is paid on the
    // preparing thread).
    const cloned = serialize(withoutWireColumns(prepared));
    const t2a = process.hrtime.bigint();
    deserialize(cloned);
    const t2b = process.hrtime.bigint();
    times.back += Number(t2b - t2a);
    const rows = new StepSliceRows(runIdBytes, texts);
    const slices = slicesOf(event);
    // Embeddings the log's body keeps are not in the rows: as the projector does.
    const vectors = embeddingsInBody(
      prepared.body,
      slices.reduce((n, sl) => n + sl.count, 0),
    );
    for (const slice of slices) {
      const inBody = vectors && embeddingsAfter(vectors, slice.offset);
      if (Array.isArray(slice.steps)) rows.objects(PLACE, 0, position, slice.steps, inBody);
      else rows.columns(PLACE, 0, position, slice.steps, slice.count, inBody);
      steps += slice.count;
    }
    const t3 = process.hrtime.bigint();
    times.parse += Number(t1 - t0);
    times.prepare += Number(t2 - t1);
    times.rows += Number(t3 - t2b);
  }
  return { ...times, steps };
}

async function measure(s: IngestScenario, dir: string): Promise<Result> {
  const { files } = await writeRequests(dir, s);
  const lines: string[] = [];
  const bodies: Buffer[] = [];
  for (const f of files) {
    bodies.push(await readFile(f));
    lines.push(...(bodies.at(-1) as Buffer).toString('utf8').split('\n').filter(Boolean));
    await rm(f);
  }
  const runId = '00000000-0000-4000-8000-000000000000';
  const best: Times = {
    parse: Infinity,
    read: Infinity,
    prepare: Infinity,
    back: Infinity,
    rows: Infinity,
  };
  const cpu: number[] = [];
  let steps = 0;
  for (let pass = 0; pass < WARM_UP_PASSES + PASSES; pass++) {
    const before = process.cpuUsage();
    const t = onePass(lines, Buffer.alloc(16), runId);
    t.read = await readPass(bodies);
    const used = process.cpuUsage(before);
    steps = t.steps;
    if (pass < WARM_UP_PASSES) continue;
    for (const phase of PHASES) best[phase] = Math.min(best[phase], t[phase]);
    cpu.push((used.user + used.system) * 1000);
  }
  cpu.sort((a, b) => a - b);
  return { label: s.label, steps, best, processCpu: cpu[cpu.length >> 1] as number };
}

function scenarios(): IngestScenario[] {
  return [
    { label: 'no-embeddings', steps: STEPS, embeddingDim: 0 },
    { label: 'no-embeddings, columnar', steps: STEPS, embeddingDim: 0, columnar: true },
    { label: 'no-embeddings, extra fields', steps: STEPS, embeddingDim: 0, extraFields: true },
    {
      label: 'no-embeddings, columnar, extra fields',
      steps: STEPS,
      embeddingDim: 0,
      columnar: true,
      extraFields: true,
    },
    { label: 'embeddings-256', steps: EMBEDDED_STEPS, embeddingDim: 256 },
    { label: 'embeddings-256, columnar', steps: EMBEDDED_STEPS, embeddingDim: 256, columnar: true },
  ].filter((s) => s.steps > 0);
}

function commandLine(): string {
  return benchCommand('bench:ingest-server', [
    'BENCH_INGEST_SERVER_STEPS',
    'BENCH_INGEST_SERVER_EMBEDDING_STEPS',
    'BENCH_INGEST_SERVER_PASSES',
  ]);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-bench-server-'));
  const results: Result[] = [];
  try {
    for (const s of scenarios()) {
      const r = await measure(s, dir);
      results.push(r);
      const us = (phase: Phase) => fmt(r.best[phase] / r.steps / 1000, 2);
      console.log(
        `${r.label} ${r.steps}: parse ${us('parse')} µs/step, read ${us('read')}, prepare ${us('prepare')}, read back ${us('back')}, rows ${us('rows')}; process CPU ${fmt(r.processCpu / r.steps / 1000, 2)} µs/step`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const us = (r: Result, ns: number) => `${fmt(ns / r.steps / 1000, 2)} µs`;
  const lines = results.map((r) => {
    const total = r.best.read + r.best.prepare + r.best.rows;
    return `| ${r.label} | ${r.steps.toLocaleString('en')} | ${us(r, r.best.parse)} | ${us(r, r.best.read)} | ${us(r, r.best.prepare)} | ${us(r, r.best.back)} | ${us(r, r.best.rows)} | ${us(r, total)} | ${fmt(total / r.best.parse, 1)} | ${us(r, r.processCpu)} |`;
  });
  writeSection(
    'ingest-server',
    `
## The server's own CPU per ingested step (\`npm run bench:ingest-server\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`${commandLine()}\` (\`BENCH_INGEST_SERVER_STEPS\`, default 100,000; \`BENCH_INGEST_SERVER_EMBEDDING_STEPS\`, default 20,000; \`BENCH_INGEST_SERVER_PASSES\`, default 10).

The NDJSON request bodies of bench:ingest's synthetic run (one line per iteration of 16 tasks × 8 rollouts), handled in
this process by the server's own modules, with no database, HTTP or other thread: **parse** is \`JSON.parse\` of
each line (the baseline: the least any server must do with the body); **read** is the body cut into lines and each
parsed, as the server reads a request (\`ndjsonEvents\`, the body fed in 64 KB chunks); **prepare** checks the event and makes
the log's body and digest (\`prepareEvent\`); **read back** is what the request's thread pays to take a prepared event
from the preparing thread (\`prepare-thread.ts\`, bodies of 64 KiB or more): postMessage's structured clone read back
(\`v8.deserialize\`; the preparing thread pays the writing); **rows** cuts its trajectory slices and writes their binary COPY rows
for \`step_slices\` (\`StepSliceRows\`, text ids from the process's cache, warm after the warm-up passes, as for a run whose texts recur). Each figure is the
least over ${PASSES} passes after ${WARM_UP_PASSES} warm-up passes. **Process CPU** is this process's CPU time, all its
threads, over a whole pass (every phase, parse and read included, and the clone's writing, so about parse + read +
prepare + read back + rows when
nothing else is paid), the median over the passes: what it holds beyond the phases is garbage collection and
compilation on V8's helper threads and the system calls of allocating memory, which the least wall times of the
main thread do not show. What bench:ingest measures beyond these (its "server CPU") is HTTP, streams,
node-postgres, packing for recompute, and the system calls of all of them.

| scenario | steps | parse (baseline) | read | prepare | read back | rows | sum of read, prepare, rows | sum ÷ parse | process CPU |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${lines.join('\n')}
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
