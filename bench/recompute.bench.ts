/**
 * `npm run bench:recompute`: on a real server process and an embedded
 * PostgreSQL, (1) reads a stored run of about 1M steps the way recompute does,
 * with the row reader the server had before (kept in bench/support as the
 * baseline) and with today's binary reader, then recomputes GiGPO and
 * Gated-BEPO end to end (queue, read, estimate in worker threads, store) next
 * to the library's own time, sampling the server's peak resident memory;
 * (2) times the online path's first call on 6,400-step iterations; (3) times
 * `compare` over a 100k-step iteration with five cached methods. Writes
 * docs/benchmarks.md.
 */
import { CreditlabClient } from '@creditlab/client';
import { estimate, methodInputs, type ColumnarBatch } from '@creditlab/estimators';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type pg from 'pg';
import { readIterations } from '../apps/server/src/advantages/iteration-reader';
import { ADMIN_KEY, gql } from '../test/support/test-server';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { readBatchesByRows } from './support/row-reader-baseline';
import { BENCH_ITERATION as ITERATION, ingestRun } from './support/synthetic-ingest';
import {
  CHUNK_ITERATIONS,
  chunkIterations,
  DEFAULT_CHUNK_STEPS as CHUNK_STEPS,
} from '../apps/server/src/jobs/recompute-chunks';

const RUN_STEPS = Number(process.env.BENCH_RECOMPUTE_STEPS ?? 1_000_000);
const EMBEDDING_STEPS = Number(process.env.BENCH_RECOMPUTE_EMBEDDING_STEPS ?? 200_000);
const COMPARE_STEPS = Number(process.env.BENCH_COMPARE_STEPS ?? 100_000);
const ONLINE_ITERATIONS = 5;
const METHODS = ['gigpo', 'gated-bepo'];

/** Iteration numbers 0..n-1 in the chunks the recompute job reads them in (`sizes`: steps per iteration). */
const chunksOf = (sizes: number[]) =>
  chunkIterations(
    sizes.map((_, i) => i),
    (i) => sizes[i] as number,
    { steps: CHUNK_STEPS, iterations: CHUNK_ITERATIONS },
  );

/** Seconds to read every iteration with `read`, and the batches read. */
async function timeRead(
  sizes: number[],
  read: (chunk: number[]) => Promise<ColumnarBatch[]>,
): Promise<{ seconds: number; batches: ColumnarBatch[] }> {
  const t0 = performance.now();
  const batches: ColumnarBatch[] = [];
  for (const chunk of chunksOf(sizes)) batches.push(...(await read(chunk)));
  return { seconds: (performance.now() - t0) / 1000, batches };
}

/** The server's reader: from packed rows where fresh ones exist (`packed`), else from the step slices. */
/** How the online path's first call reads the iteration it was just sent, under this run's setting. */
function onlineRead(): string {
  const setting = process.env.CREDITLAB_PACK_ITERATIONS ?? 'on-append';
  return setting === 'on-append'
    ? 'one packed row: its own append packed it, `CREDITLAB_PACK_ITERATIONS=on-append`, the default'
    : `its step slices: with \`CREDITLAB_PACK_ITERATIONS=${setting}\` the open iteration is not packed`;
}

async function binaryRead(
  pool: pg.Pool,
  runId: string,
  chunk: number[],
  method?: string,
  packed = false,
) {
  const inputs = method === undefined ? undefined : methodInputs(method);
  const read = await readIterations(pool, runId, chunk, { steps: true, inputs, packed });
  if (packed && [...read.values()].some((it) => !it.packed)) throw new Error('not all packed');
  return [...read.values()].flatMap((it) => (it.batch ? [it.batch] : []));
}

/** Seconds until the server has packed every iteration of the run (it does so in the background). */
async function waitForPacking(pool: pg.Pool, runId: string, iterations: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const res = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM iteration_columns WHERE run_id = $1',
      [runId],
    );
    if ((res.rows[0] as { n: number }).n >= iterations) return (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The server's resident memory, peak since the last reset (Linux: /proc/<pid>/status, clear_refs). */
const memory = {
  resetPeak: (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5'),
  /** `field` (VmHWM: peak, VmRSS: now) of /proc/<pid>/status, in MiB. */
  mib: (pid: number, field: 'VmHWM' | 'VmRSS') => {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return Number(m?.[1] ?? NaN) / 1024;
  },
};

/** Later jobs of a method, each with its own γ so that none reuses another's set. */
const LATER_JOBS = [0.9, 0.91, 0.92];

async function timeRecompute(
  url: string,
  runId: string,
  method: string,
  params: Record<string, unknown> = {},
): Promise<number> {
  const t0 = performance.now();
  const res = await gql<{ recompute: { id: string } }>(
    { url },
    'mutation($r: ID!, $m: MethodInput!) { recompute(runId: $r, method: $m) { id } }',
    { r: runId, m: { name: method, params } },
  );
  const jobId = res.data!.recompute.id;
  for (;;) {
    const job = await gql<{ job: { status: string; error: string | null } }>(
      { url },
      'query($id: ID!) { job(id: $id) { status error } }',
      { id: jobId },
    );
    const status = job.data!.job.status.toLowerCase(); // a GraphQL enum: COMPLETED, ...
    if (status === 'completed') return (performance.now() - t0) / 1000;
    if (status !== 'queued' && status !== 'running') throw new Error(JSON.stringify(job.data));
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  const bench = await startBenchServer({
    CREDITLAB_ESTIMATOR_THREADS: '2',
    CREDITLAB_JOB_CONCURRENCY: '2',
  });
  const { server, pool } = bench;
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 50 });
  try {
    console.log(`ingesting a run of ${RUN_STEPS} steps...`);
    const run = await ingestRun(client, 'recompute bench', ITERATION, RUN_STEPS);

    // The server packs complete iterations in the background as they complete.
    const n = run.iterations;
    const packingLag = await waitForPacking(pool, run.id, n);
    console.log(`packed ${n} iterations ${fmt(packingLag, 2)} s after the last append`);
    // Reading every iteration once, as the job reads them: the old row reader, binary COPY of the
    // steps (the reader before packed rows), then the packed rows.

    const rowsRead = await timeRead(run.sizes, (c) =>
      readBatchesByRows(pool, run.id, c, new Map()),
    );
    const everything = await timeRead(run.sizes, (c) => binaryRead(pool, run.id, c));
    console.log(
      `read once: rows ${fmt(rowsRead.seconds)} s, binary (every column) ${fmt(everything.seconds)} s`,
    );
    const pid = server.process.pid as number;
    const rows: string[] = [];
    const readRows: string[] = [
      `| row reader (before): every column, texts, one object per step | ${fmt(rowsRead.seconds)} s | 1.00× |`,
      `| binary COPY: every column | ${fmt(everything.seconds)} s | ${fmt(rowsRead.seconds / everything.seconds, 1)}× |`,
    ];
    for (const method of METHODS) {
      const stepsRead = await timeRead(run.sizes, (c) => binaryRead(pool, run.id, c, method));
      const read = await timeRead(run.sizes, (c) => binaryRead(pool, run.id, c, method, true));
      const what = [...methodInputs(method)].join(', ');
      readRows.push(
        `| binary COPY of the step slices: what ${method} reads (${what}) | ${fmt(stepsRead.seconds)} s | ${fmt(rowsRead.seconds / stepsRead.seconds, 1)}× |`,
        `| packed rows: what ${method} reads (${what}) | ${fmt(read.seconds)} s | ${fmt(rowsRead.seconds / read.seconds, 1)}× (${fmt(stepsRead.seconds / read.seconds, 1)}× the slices' COPY) |`,
      );
      for (const b of read.batches.slice(0, 3)) estimate(b, method); // warm-up
      const t1 = performance.now();
      for (const b of read.batches) estimate(b, method);
      const librarySeconds = (performance.now() - t1) / 1000;
      memory.resetPeak(pid);
      const before = memory.mib(pid, 'VmRSS');
      const firstJob = await timeRecompute(server.url, run.id, method);
      const peak = memory.mib(pid, 'VmHWM');
      const later: number[] = [];
      for (const gamma of LATER_JOBS)
        later.push(await timeRecompute(server.url, run.id, method, { gamma }));
      const laterJobs = median(later);
      const budget = 3 * librarySeconds + read.seconds;
      const met = (s: number) => (s <= budget ? 'yes' : 'no');
      rows.push(
        `| ${method} | ${fmt(read.seconds, 2)} s | ${fmt(librarySeconds, 2)} s | ${fmt(firstJob, 2)} s | ${fmt(laterJobs, 2)} s (${later.map((s) => fmt(s, 2)).join(', ')}) | ${fmt(run.steps / laterJobs / 1000, 0)}k | ${fmt(budget, 2)} s | ${met(firstJob)} / ${met(laterJobs)} | ${fmt(peak, 0)} MiB (${fmt(before, 0)} MiB before) |`,
      );
      console.log(readRows.at(-1));
      console.log(rows.at(-1));
    }

    // BiPACE, the one method that reads embeddings, on a run that has them (every step a 256-d one, so
    // its events' log bodies hold them and the slices say where: it reads them from there).
    const embedded = await ingestRun(
      client,
      'recompute bench embeddings',
      { ...ITERATION, withoutEmbeddings: false, embeddingDim: 256 },
      EMBEDDING_STEPS,
    );
    await waitForPacking(pool, embedded.id, embedded.iterations);
    const bipaceRead = await timeRead(embedded.sizes, (c) =>
      binaryRead(pool, embedded.id, c, 'bipace'),
    );
    for (const b of bipaceRead.batches.slice(0, 3)) estimate(b, 'bipace'); // warm-up
    const tb = performance.now();
    for (const b of bipaceRead.batches) estimate(b, 'bipace');
    const bipaceLibrary = (performance.now() - tb) / 1000;
    const bipaceJobs: number[] = [];
    for (const gamma of [1, ...LATER_JOBS])
      bipaceJobs.push(await timeRecompute(server.url, embedded.id, 'bipace', { gamma }));
    const bipaceLater = median(bipaceJobs.slice(1));
    const bipaceLine = `on a run of ${embedded.steps.toLocaleString('en')} steps in ${embedded.iterations} iterations with 256-d embeddings (\`BENCH_RECOMPUTE_EMBEDDING_STEPS\`, default 200,000): read once ${fmt(bipaceRead.seconds, 2)} s (the step slices, their embeddings from the events' log bodies), library ${fmt(bipaceLibrary, 2)} s, first job ${fmt(bipaceJobs[0] as number, 2)} s, later jobs ${fmt(bipaceLater, 2)} s (${bipaceJobs
      .slice(1)
      .map((x) => fmt(x, 2))
      .join(
        ', ',
      )}), ${fmt(embedded.steps / bipaceLater / 1000, 0)}k steps/s; aim (read once + 3 × library) ${fmt(bipaceRead.seconds + 3 * bipaceLibrary, 2)} s`;
    console.log(`bipace ${bipaceLine}`);

    // Online path, as a trainer records: right after appending an iteration, the first call on it
    // (staleness check, read, estimate, store, the advantages.used event), each method in turn;
    // later calls read the stored set.
    const post = async (runId: string, method: string, iteration: number) => {
      const t = performance.now();
      const r = await fetch(`${server.url}/v1/runs/${runId}/iterations/${iteration}/advantages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/octet-stream',
          authorization: `Bearer ${ADMIN_KEY}`,
        },
        body: JSON.stringify({ method }),
      });
      if (r.status !== 200) throw new Error(await r.text());
      await r.arrayBuffer();
      if (
        r.headers.get('x-creditlab-reused') !== 'false' &&
        r.headers.get('x-creditlab-reused') !== 'true'
      )
        throw new Error('no X-Creditlab-Reused header');
      return { ms: performance.now() - t, reused: r.headers.get('x-creditlab-reused') === 'true' };
    };
    const onlineMethods = ['gigpo', 'gated-bepo', 'gaca'];
    const first = new Map<string, number[]>(onlineMethods.map((m) => [m, []]));
    const online = await ingestRun(
      client,
      'online bench',
      { ...ITERATION, groups: 10_000, maxTotalSteps: 6400 }, // as many tasks as it takes to reach 6,400 steps
      6400 * ONLINE_ITERATIONS,
      undefined,
      async (runId, i) => {
        for (const method of onlineMethods) {
          const call = await post(runId, method, i);
          if (call.reused) throw new Error(`first call on iteration ${i} was not computed`);
          first.get(method)?.push(call.ms);
        }
      },
    );
    // ingestRun finishes the run; a trainer consumes advantages while it runs.
    await client.appendEvents(online.id, [
      { id: crypto.randomUUID(), type: 'run.resumed', data: {} },
    ]);
    // The part of a first call the reader is: the old row reader, the step slices' reader, and the
    // packed row's reader on iteration 0 (what the trainer's call on its current iteration reads: packed
    // by its own append with on-append, the default; from the step slices with on-complete).
    const readMs = async (read: () => Promise<unknown>) => {
      const times: number[] = [];
      for (let i = 0; i < 9; i++) {
        const t = performance.now();
        await read();
        times.push(performance.now() - t);
      }
      return median(times);
    };
    const onlineRows: string[] = [];
    for (const method of onlineMethods) {
      const firsts = first.get(method) as number[];
      const later: number[] = [];
      for (let i = 0; i < 20; i++)
        later.push((await post(online.id, method, i % online.iterations)).ms);
      const oldRead = await readMs(() => readBatchesByRows(pool, online.id, [0], new Map()));
      const newRead = await readMs(() => binaryRead(pool, online.id, [0], method));
      const packedRead = await readMs(() => binaryRead(pool, online.id, [0], method, true));
      onlineRows.push(
        `| ${method} | ${online.sizes.slice(0, online.iterations).join(', ')} | ${fmt(median(firsts), 1)} ms (${fmt(Math.min(...firsts), 1)}–${fmt(Math.max(...firsts), 1)}) | ${fmt(median(later), 1)} ms | ${fmt(oldRead, 1)} ms | ${fmt(newRead, 1)} ms | ${fmt(packedRead, 1)} ms |`,
      );
      console.log(onlineRows.at(-1));
    }

    // compare over one large iteration with five cached methods.
    const big = await ingestRun(
      client,
      'compare bench',
      { ...ITERATION, groups: 100_000, maxTotalSteps: COMPARE_STEPS },
      COMPARE_STEPS,
    );
    const methods = ['grpo', 'gigpo', 'gaca', 'gated-bepo', 'gagpo'].map((name) => ({ name }));
    const q = `query($r: ID!, $m: [MethodInput!]!) { compare(runId: $r, methods: $m) {
      stepCount methods { method summary { mean p50 } rates } pairs { a b pearson spearman signAgreement disagreements { stepIndex action advantages } }
      againstEpisode { method against examples { action } } rows(first: 100) { nodes { advantages } } } }`;
    const t2 = performance.now();
    const firstCompare = await gql(server, q, { r: big.id, m: methods });
    if (firstCompare.errors) throw new Error(JSON.stringify(firstCompare.errors));
    const coldCompare = performance.now() - t2;
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t = performance.now();
      await gql(server, q, { r: big.id, m: methods });
      times.push(performance.now() - t);
    }
    const compareMs = median(times);
    console.log(
      `compare over ${big.steps} steps: ${fmt(compareMs, 0)} ms cached, ${fmt(coldCompare, 0)} ms computing the sets`,
    );

    writeSection(
      'recompute',
      `
## Recompute, online path and compare (\`npm run bench:recompute\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}; load average at the end ${loadavg()
        .map((x) => fmt(x, 1))
        .join(
          ', ',
        )} (1, 5, 15 min; other work shares this machine, so compare figures of the same run).
Command: \`npm run bench:recompute\` (\`BENCH_RECOMPUTE_STEPS\`, default 1,000,000; \`BENCH_RECOMPUTE_EMBEDDING_STEPS\`, default 200,000; \`BENCH_COMPARE_STEPS\`, default 100,000).
A server process with 2 estimator threads and 2 job workers, on an embedded PostgreSQL; synthetic rollouts
(tasks of G = 8 rollouts of up to 50 steps over 20 recurring states), ingested through the HTTP API first.

**Reading a stored run** of ${run.steps.toLocaleString('en')} steps in ${run.iterations} iterations into columnar batches,
in the chunks the recompute job reads them in (consecutive iterations up to 131,072 steps, the default
\`CREDITLAB_RECOMPUTE_CHUNK_STEPS\`; ${chunksOf(run.sizes).length} chunks here), one snapshot per chunk, from this benchmark's
process on its own connection.
The row reader is the server's reader before binary COPY, kept in \`bench/support/row-reader-baseline.ts\` (it
reads the \`steps\` view, one row per step); the binary COPY of the step slices is what reads an iteration without
a fresh packed row (\`step_slices\` rows, their arrays walked in the server); packed rows are the \`iteration_columns\` rows the server wrote as it ingested (with on-append, the default,
each request packs the iteration it sends; with on-complete, a background pass packs each iteration once complete;
all ${run.iterations} were there ${fmt(packingLag, 2)} s after the last append returned). All read in the same run, so their
ratios hold even when the shared machine is busy.

| reader | read once | speed-up |
|---|---:|---:|
${readRows.join('\n')}

Where a read's time goes (one-off profiles on this machine, 2026-11-30, while other work kept it busy: shares,
not seconds). Binary COPY of the steps (what GiGPO reads), when steps were stored one row each: PostgreSQL's index
scan and the COPY stream ≈ 60 %, the shape ≈ 25 %, decoding into typed arrays ≈ 10 %: mostly PostgreSQL producing
one row per step. Since steps are stored a slice per row (2026-12-01) PostgreSQL sends about 12 times fewer rows:
0.64 → 0.50 s for GiGPO's read and 0.79 → 0.44 s for Gated-BEPO's in one run each. Packed rows
(a 200k-step run): at first the shape query was ≈ 70 % of the read, as it still joined the trajectories of the
packed iterations before discarding them; with the shape of unpacked iterations read per iteration through the
primary keys, the read is a few round trips per chunk and copying the columns.

**Recompute of a stored run, end to end** (GraphQL \`recompute\` until the job reports completed: the queue, reading
each iteration from its packed row, estimating in worker threads, storing the float32 advantages; the
job reads the next chunk and stores the previous one while it estimates this one). "Read once" is the method's packed row above;
"library" is the estimator alone on the same batches in one thread, timed after a warm-up. The aim is end to end within
read once + 3 × library. "First job" is the method's first job after the server started; "later jobs" are three more
of the same method, each with another γ so that none reuses a stored set (median, each in brackets). The first job
also pays for compiling. Its worker threads used to warm up on 36 steps, and in a per-chunk timeline (one-off
instrumentation, 2026-12-01) a first job's first chunk took 120–165 ms to estimate against 15–50 ms for every later
chunk; they now warm up on an iteration-sized batch (1,728 steps, 3 rounds, 55–200 ms per thread at start-up), and the
first 400k-step GiGPO job went from 0.68 to 0.35 s. What the first job still pays is the main thread running the job's
read and store code for the first time. Since the library column is timed warm, the aim is judged on the later jobs;
the first job is shown beside it.
"Peak RSS" is the server process's peak resident memory during the first recompute (VmHWM, reset just before it;
the process's RSS at that moment beside it, which includes the 1M-step ingest's leftovers).

Where the rest of the time goes (one-off, a 200k-step GiGPO job on this machine, 2026-11-30, busy): with the read
behind the estimate, storing a chunk was the largest part — PostgreSQL compressing the advantages and diagnostics
with pglz (≈ 30 of 35 ms per 16 iterations); they are stored uncompressed now, and a chunk is stored while the next
is estimated. Next came handing each iteration to a worker thread and back (16 hand-overs per chunk, each waiting
for a busy machine to schedule both sides): a chunk now goes as one task per thread. Then the chunks themselves
(2026-12-01): they were 16 iterations, so a run of small iterations (here about 1,500 steps each) paid a chunk's
fixed costs (a read's round trips, a hand-over to the threads and back, a store, a progress notice) 43 times for
1M steps, which made GiGPO's job 1.37 s against an aim of 0.49 s. Chunks are now sized by steps (${chunksOf(run.sizes).length} here); a
timeline of the GiGPO job (logged per chunk, a one-off instrumentation) then showed the job waiting on storing
the previous chunk, not on estimating: about 3 MB per chunk of float32 advantages and five diagnostics, each
commit waiting for its WAL to be flushed. Chunks are now committed without that wait (derived rows; see
docs/architecture.md, "Jobs"); in back-to-back runs at load 2–3 the GiGPO job took 1.35 and 1.96 s with the
wait and 0.84 and 0.96 s without it. Storing still took 60–130 ms per 3 MB chunk while the estimator threads
occupied both cores: PostgreSQL writing 24 MB of TOAST for 1M steps competed with the estimators for CPU, and 20 MB of
it were GiGPO's five per-step diagnostics, which few ever read. A job now stores the advantages and the summary only;
the first read that asks for an iteration's diagnostics computes them (docs/architecture.md, "Jobs"). Measured with
one 1M-step run and several GiGPO jobs in a row on one server (load 1.6–2.5, a throwaway script): with diagnostics
stored, 1.11–1.60 s for the first job and 0.48–0.65 s for later ones; without, 0.64–1.18 s and 0.36–0.48 s.
Beyond that, what is left is mostly the
estimators on two threads sharing two cores with the server's main thread and PostgreSQL (in a 200k-step
Gated-BEPO job, their own time in the threads was 1.5–5× the library's alone), then the queue and the job's own
statements before and after.

| method | read once | library | first job | later jobs | steps/s (later) | aim | met (first / later) | peak RSS (RSS when it started) |
|---|---:|---:|---:|---:|---:|---:|---|---:|
${rows.join('\n')}

**BiPACE**, the one method that reads embeddings (packed rows leave them out), ${bipaceLine}.

**Online path, first call** (\`POST /v1/runs/{id}/iterations/{i}/advantages\`, float32 response): the trainer's
recording path on the iteration it has just appended, each method in turn right after the append — the check
for a stored version, reading the iteration (${onlineRead()}), estimating, storing the set's iteration
with the \`advantages.used\` event. Median over ${ONLINE_ITERATIONS} iterations (one first call each; range in
brackets); later calls read the stored set. The last three columns are the reader alone on iteration 0 (median
of 9): the row reader before binary COPY (through the \`steps\` view), the step slices' binary reader (what a
first call read before appends packed iterations), and the packed row's reader.

| method | steps per iteration | first call | later calls (median of 20) | row reader | slices' binary reader | packed reader |
|---|---|---:|---:|---:|---:|---:|
${onlineRows.join('\n')}

**compare** over one iteration of ${big.steps.toLocaleString('en')} steps with five methods (grpo, gigpo, gaca,
gated-bepo, gagpo) already stored: summaries, 10 pairs with Pearson, Spearman, sign agreement and the 10 largest
disagreements each, the episode-sign analysis, 100 rows: **${fmt(compareMs, 0)} ms** (median of 7; aim < 300 ms).
The first call, which also computed the five sets, took ${fmt(coldCompare, 0)} ms.
Before 2026-12-01 this took 1.02–1.08 s: every pair ranked both of its series again, pooled and within each task
group (a comparison sort per ranking), and copied each position and iteration slice out per pair. Now each series is
ranked once, pooled and within groups, from one stable radix sort; the slices are found once per comparison and
scored in two passes over the steps; the same numbers to the last bit (libs/stats unit tests against the direct
definitions). A server CPU profile of eight calls then showed what is left spread thin: ranking (≈ 30 ms a call),
the slices (≈ 30 ms), the five summaries' sorts and the reads.
By 2026-12-03 it measured 319–399 ms here, over the aim. Timing each phase of a call (a throwaway instrumentation,
machine busy) put reading the six stored sets first (≈ 106 ms): each set was read by a query of its own that read the
iteration's shape again. They are now read in one statement, in the snapshot and round trip of one shape read (≈ 29
ms). Next came sorting each series twice, once for its quantiles and once for its ranks (≈ 10 ms a series): the
ranks' sort now gives the sorted values too. Alternating the old and new code twice
(\`BENCH_RECOMPUTE_STEPS=20000 npm run bench:recompute\`, load 2.7–3.0): 334 and 344 ms before, 241 and 260 ms after.
What is left, largest first: the ten pairs' agreement (≈ 75 ms), ranking (≈ 50 ms), the per-step references
(≈ 22 ms), the layout, the listed steps and the GraphQL answer.
`,
    );
  } finally {
    await bench.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
