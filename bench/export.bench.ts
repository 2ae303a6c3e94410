/**
 * `npm run bench:export`: a synthetic run of about 1,000,000 steps is ingested through the HTTP API
 * of a real server process, then exported in one call of `GET /v1/runs/{id}/export`, as CSV and as
 * Parquet, with two methods' advantages (computed on the way, as a read key's export does). Reports
 * time, size and the server's peak resident memory during each export (VmHWM, reset before each
 * one), to show that an export streams iteration by iteration rather than holding the run.
 */
import { CreditlabClient } from '@creditlab/client';
import { writeFile } from 'node:fs/promises';
import { refuseMissingFields } from '../apps/server/src/exports/missing-fields';
import { ADMIN_KEY } from '../test/support/test-server';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { mib, procStatusBytes } from './support/process-memory';
import { BENCH_ITERATION, ingestRun } from './support/synthetic-ingest';

const STEPS = Number(process.env.BENCH_EXPORT_STEPS ?? 1_000_000);
const EMBEDDED_STEPS = Number(process.env.BENCH_EXPORT_EMBEDDING_STEPS ?? 100_000);
const METHODS = [{ name: 'grpo' }, { name: 'gigpo' }];

/** The process's resident memory now and at its peak since the last reset, in MiB (Linux). */
function memory(pid: number): { rss: number; peak: number } {
  return { rss: mib(procStatusBytes(pid, 'VmRSS')), peak: mib(procStatusBytes(pid, 'VmHWM')) };
}

interface Exported {
  format: string;
  seconds: number;
  bytes: number;
  rssBefore: number;
  peak: number;
}

async function exportOnce(
  url: string,
  runId: string,
  pid: number,
  format: string,
  methods: { name: string }[] = METHODS,
) {
  await writeFile(`/proc/${pid}/clear_refs`, '5'); // resets the peak (VmHWM) to the current RSS
  const rssBefore = memory(pid).rss;
  const query = new URLSearchParams({ format, methods: JSON.stringify(methods) });
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/runs/${runId}/export?${query}`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  if (!res.ok || !res.body) throw new Error(`export ${format}: ${res.status} ${await res.text()}`);
  let bytes = 0;
  for await (const chunk of res.body) bytes += (chunk as Uint8Array).length;
  const seconds = (performance.now() - t0) / 1000;
  return { format, seconds, bytes, rssBefore, peak: memory(pid).peak };
}

async function main(): Promise<void> {
  const bench = await startBenchServer({});
  const pid = bench.server.process.pid as number;
  const results: Exported[] = [];
  let run: { steps: number; iterations: number };
  const checkSeconds: number[] = [];
  let embeddingCheck: { steps: number; check: number; bipace: Exported } | undefined;
  try {
    const client = new CreditlabClient({ url: bench.server.url, apiKey: ADMIN_KEY });
    const ingested = await ingestRun(client, 'bench export', BENCH_ITERATION, STEPS);
    run = ingested;
    console.log(`ingested ${ingested.steps} steps in ${ingested.iterations} iterations`);
    for (const format of ['csv', 'parquet']) {
      const r = await exportOnce(bench.server.url, ingested.id, pid, format);
      results.push(r);
      console.log(
        `${format}: ${fmt(r.seconds, 1)} s, ${fmt(r.bytes / 2 ** 20, 0)} MiB, server RSS ${fmt(r.rssBefore, 0)} → peak ${fmt(r.peak, 0)} MiB`,
      );
    }
    // The check a method that needs NLL or value (gaca, ppo-gae) adds before an export's first byte,
    // timed alone: every exported step looked at for both fields (none lacks them here).
    const iterations = Array.from({ length: ingested.iterations }, (_, i) => i);
    for (let pass = 0; pass < 2; pass++) {
      const t0 = performance.now();
      await refuseMissingFields(bench.pool, ingested.id, iterations, ['gaca', 'ppo-gae']);
      checkSeconds.push((performance.now() - t0) / 1000);
    }
    console.log(`field check: ${checkSeconds.map((x) => fmt(x, 2)).join(', ')} s`);
    // The embedding check (bipace) reads every embedding once more: measured on a run that has them,
    // beside the bipace export it precedes.
    const embedded = await ingestRun(
      client,
      'bench export embeddings',
      { ...BENCH_ITERATION, withoutEmbeddings: false, embeddingDim: 256 },
      EMBEDDED_STEPS,
    );
    const t0 = performance.now();
    await refuseMissingFields(
      bench.pool,
      embedded.id,
      Array.from({ length: embedded.iterations }, (_, i) => i),
      ['bipace'],
    );
    const check = (performance.now() - t0) / 1000;
    const bipace = await exportOnce(bench.server.url, embedded.id, pid, 'csv', [
      { name: 'bipace' },
    ]);
    embeddingCheck = { steps: embedded.steps, check, bipace };
    console.log(
      `embedding check on ${embedded.steps} steps: ${fmt(embeddingCheck.check, 2)} s; bipace export ${fmt(bipace.seconds, 1)} s`,
    );
  } finally {
    await bench.close();
  }
  const rows = results.map(
    (r) =>
      `| ${r.format} | ${fmt(r.seconds, 1)} s | ${fmt(run.steps / r.seconds / 1000, 0)}k | ${fmt(r.bytes / 2 ** 20, 0)} MiB | ${fmt(r.rssBefore, 0)} MiB | ${fmt(r.peak, 0)} MiB |`,
  );
  writeSection(
    'export',
    `
## Export (\`npm run bench:export\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:export\` (\`BENCH_EXPORT_STEPS\`, default 1,000,000; \`BENCH_EXPORT_EMBEDDING_STEPS\`, default 100,000).

A synthetic run of ${run!.steps.toLocaleString('en')} steps in ${run!.iterations} iterations (tasks of G = 8
rollouts of up to 50 steps) is exported in one call of \`GET /v1/runs/{id}/export\` with the advantages of
${METHODS.map((m) => m.name).join(' and ')}, computed on the way (not stored). "Peak" is the server process's
peak resident memory during the export (VmHWM, reset just before): it stays near the resting size because
the export holds one iteration at a time.

| format | one call | steps/s | size | server RSS before | server peak during |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

A method that needs a step field (gaca: NLL, ppo-gae: value, bipace: embeddings) has every exported step
checked for it before the first byte, so that a step lacking it is a 400 naming that step rather than a file cut
short. That check for NLL and value on this run, timed alone: ${checkSeconds.map((x) => `${fmt(x, 2)} s`).join(' then ')}. The check
for embeddings (bipace) reads every embedding the step slices hold once more; a slice whose embeddings are in
its event's log body (an event whose every step has one of one size, as here) has one per step by construction,
and is not read: on a run of ${embeddingCheck!.steps.toLocaleString('en')} steps with 256-d
embeddings (\`BENCH_EXPORT_EMBEDDING_STEPS\`, default 100,000) it took ${fmt(embeddingCheck!.check, 2)} s timed alone, and a
bipace export of that run as CSV (the check included) ${fmt(embeddingCheck!.bipace.seconds, 1)} s.
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
