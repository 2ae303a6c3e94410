/**
 * `npm run bench:recompute`: on a real server process and an embedded
 * PostgreSQL, (1) recomputes GiGPO and Gated-BEPO for a stored run of about
 * 1M steps end to end (queue, read, estimate in worker threads, store) and puts
 * that next to the library's own time and the time to read the steps once;
 * (2) times the online path on a 6,400-step iteration; (3) times `compare`
 * over a 100k-step iteration with five cached methods. Writes docs/benchmarks.md.
 */
import { CreditlabClient } from '@creditlab/client';
import { estimate } from '@creditlab/estimators';
import { readIterations } from '../apps/server/src/advantages/iteration-reader';
import { ADMIN_KEY, gql } from '../test/support/test-server';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { BENCH_ITERATION as ITERATION, ingestRun } from './support/synthetic-ingest';

const RUN_STEPS = Number(process.env.BENCH_RECOMPUTE_STEPS ?? 1_000_000);
const COMPARE_STEPS = Number(process.env.BENCH_COMPARE_STEPS ?? 100_000);

async function timeRecompute(url: string, runId: string, method: string): Promise<number> {
  const t0 = performance.now();
  const res = await gql<{ recompute: { id: string } }>(
    { url },
    'mutation($r: ID!, $m: MethodInput!) { recompute(runId: $r, method: $m) { id } }',
    { r: runId, m: { name: method } },
  );
  const jobId = res.data!.recompute.id;
  for (;;) {
    const job = await gql<{ job: { status: string; error: string | null } }>(
      { url },
      'query($id: ID!) { job(id: $id) { status error } }',
      { id: jobId },
    );
    if (job.data!.job.status === 'completed') return (performance.now() - t0) / 1000;
    if (job.data!.job.status !== 'queued' && job.data!.job.status !== 'running')
      throw new Error(JSON.stringify(job.data));
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

    // The time to read every iteration's steps once, as the worker reads them.
    const t0 = performance.now();
    const batches = [];
    const texts = new Map<string, string>();
    for (let i = 0; i < run.iterations; i += 16) {
      const chunk = Array.from({ length: Math.min(16, run.iterations - i) }, (_, j) => i + j);
      const read = await readIterations(pool, run.id, chunk, { steps: true, texts });
      for (const it of read.values()) if (it.batch) batches.push(it.batch);
    }
    const readSeconds = (performance.now() - t0) / 1000;

    const rows: string[] = [];
    for (const method of ['gigpo', 'gated-bepo']) {
      for (const b of batches.slice(0, 3)) estimate(b, method); // warm-up
      const t1 = performance.now();
      for (const b of batches) estimate(b, method);
      const librarySeconds = (performance.now() - t1) / 1000;
      const endToEnd = await timeRecompute(server.url, run.id, method);
      const budget = 3 * librarySeconds + readSeconds;
      rows.push(
        `| ${method} | ${run.steps.toLocaleString('en')} in ${run.iterations} iterations | ${fmt(librarySeconds, 2)} s | ${fmt(readSeconds, 2)} s | ${fmt(endToEnd, 2)} s | ${fmt(run.steps / endToEnd / 1000, 0)}k | ${fmt(budget, 2)} s | ${endToEnd <= budget ? 'yes' : 'no'} |`,
      );
      console.log(rows.at(-1));
    }

    // Online path on one ~6,400-step iteration: first call computes, later calls read the stored set.
    const online = await ingestRun(
      client,
      'online bench',
      { ...ITERATION, groups: 10_000, maxTotalSteps: 6400 }, // as many tasks as it takes to reach 6,400 steps
      6400,
    );
    const post = (method: string) =>
      fetch(`${server.url}/v1/runs/${online.id}/iterations/0/advantages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/octet-stream',
          authorization: `Bearer ${ADMIN_KEY}`,
        },
        body: JSON.stringify({ method }),
      }).then(async (r) => {
        if (r.status !== 200) throw new Error(await r.text());
        await r.arrayBuffer();
      });
    const onlineRows: string[] = [];
    for (const method of ['gigpo', 'gated-bepo', 'gaca']) {
      let t = performance.now();
      await post(method);
      const cold = performance.now() - t;
      const warm: number[] = [];
      for (let i = 0; i < 20; i++) {
        t = performance.now();
        await post(method);
        warm.push(performance.now() - t);
      }
      onlineRows.push(
        `| ${method} | ${online.sizes[0]} | ${fmt(cold, 1)} ms | ${fmt(median(warm), 1)} ms |`,
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

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:recompute\` (\`BENCH_RECOMPUTE_STEPS\`, default 1,000,000; \`BENCH_COMPARE_STEPS\`, default 100,000).
A server process with 2 estimator threads and 2 job workers, on an embedded PostgreSQL; synthetic rollouts
(tasks of G = 8 rollouts of up to 50 steps over 20 recurring states), ingested through the HTTP API first.

**Recompute of a stored run, end to end** (GraphQL \`recompute\` until the job reports completed: the queue, reading
each iteration as a columnar batch, estimating in worker threads, storing float32 arrays and diagnostics). "Library"
is the estimator alone on the same batches in one thread; "read once" is loading every iteration's steps from
PostgreSQL into columnar batches, 16 iterations per statement, as the job does. The aim is end to end within 3 × library + read once.

| method | run | library | read once | end to end | steps/s | aim | met |
|---|---|---:|---:|---:|---:|---:|---|
${rows.join('\n')}

**Online path** (\`POST /v1/runs/{id}/iterations/{i}/advantages\`, float32 response; includes recording the
\`advantages.used\` event). First call computes and stores the set's iteration; later calls read it.

| method | steps in the iteration | first call | later calls (median of 20) |
|---|---:|---:|---:|
${onlineRows.join('\n')}

**compare** over one iteration of ${big.steps.toLocaleString('en')} steps with five methods (grpo, gigpo, gaca,
gated-bepo, gagpo) already stored: summaries, 10 pairs with Pearson, Spearman, sign agreement and the 10 largest
disagreements each, the episode-sign analysis, 100 rows: **${fmt(compareMs, 0)} ms** (median of 7; aim < 300 ms).
The first call, which also computed the five sets, took ${fmt(coldCompare, 0)} ms.
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
