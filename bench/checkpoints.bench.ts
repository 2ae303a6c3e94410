/**
 * `npm run bench:checkpoints`: what checkpoints cost the server's memory. One checkpoint of
 * BENCH_CHECKPOINT_MIB (default 200) MiB is uploaded through `PUT /v1/runs/{id}/checkpoints/0`, then
 * four others at once, then the first is downloaded by 1, 4 and 8 clients at once. Reports the time
 * and the server process's peak resident memory above its resting size during each (VmHWM, reset
 * before each), beside the baseline of reading the same bytes with one plain SELECT of its parts
 * from the benchmark's own connection.
 */
import { CreditlabClient } from '@creditlab/client';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { fmt, machineLine, writeSection } from './support/bench-report';
import { startBenchServer } from './support/bench-server';
import { mib, procStatusBytes } from './support/process-memory';

const SIZE = Number(process.env.BENCH_CHECKPOINT_MIB ?? 200) * 2 ** 20;
const CLIENTS = [1, 4, 8];
const CONCURRENT_UPLOADS = 4;

interface Measured {
  what: string;
  seconds: number;
  /** Bytes moved in all. */
  bytes: number;
  restMiB: number;
  peakMiB: number;
}

/** Runs `work` with the server's peak memory reset first; its time and peak above the resting size. */
async function measured(
  pid: number,
  what: string,
  bytes: number,
  work: () => Promise<void>,
): Promise<Measured> {
  await writeFile(`/proc/${pid}/clear_refs`, '5'); // VmHWM back to the current RSS
  const restMiB = mib(procStatusBytes(pid, 'VmRSS'));
  const t0 = performance.now();
  await work();
  const seconds = (performance.now() - t0) / 1000;
  return { what, seconds, bytes, restMiB, peakMiB: mib(procStatusBytes(pid, 'VmHWM')) };
}

async function main(): Promise<void> {
  const bench = await startBenchServer({ CREDITLAB_MAX_CHECKPOINT_BYTES: String(SIZE) });
  const pid = bench.server.process.pid as number;
  const client = new CreditlabClient({ url: bench.server.url, apiKey: bench.adminKey });
  const data = randomBytes(SIZE);
  const results: Measured[] = [];
  let baseline: number;
  try {
    const { id } = await client.createRun({ name: 'bench checkpoints', env: 'e', method: 'grpo' });
    results.push(
      await measured(pid, 'upload', SIZE, async () => {
        await client.uploadCheckpoint(id, 0, data, 'application/octet-stream');
      }),
    );
    const others = Array.from({ length: CONCURRENT_UPLOADS }, (_, i) => {
      const copy = Buffer.from(data);
      copy.writeUInt32LE(i + 1, 0); // other checkpoints, not retries of the first
      return copy;
    });
    results.push(
      await measured(pid, `upload × ${CONCURRENT_UPLOADS}`, CONCURRENT_UPLOADS * SIZE, async () => {
        await Promise.all(
          others.map((bytes, i) =>
            client.uploadCheckpoint(id, i + 1, bytes, 'application/octet-stream'),
          ),
        );
      }),
    );
    for (const n of CLIENTS)
      results.push(
        await measured(pid, `download × ${n}`, n * SIZE, async () => {
          const copies = await Promise.all(
            Array.from({ length: n }, () => client.downloadCheckpoint(id, 0)),
          );
          for (const c of copies)
            if (!Buffer.from(c.data).equals(data)) throw new Error('downloaded bytes differ');
        }),
      );
    const t0 = performance.now();
    const parts = await bench.pool.query<{ data: Buffer }>(
      `SELECT p.data FROM checkpoints c
       JOIN checkpoint_parts p ON p.run_id = c.run_id AND p.upload_id = c.upload_id
       WHERE c.run_id = $1 AND c.iteration = 0 ORDER BY p.ord`,
      [id],
    );
    if (!Buffer.concat(parts.rows.map((r) => r.data)).equals(data))
      throw new Error('stored bytes differ');
    baseline = (performance.now() - t0) / 1000;
  } finally {
    await bench.close();
  }
  for (const r of results)
    console.log(
      `${r.what}: ${fmt(r.seconds, 2)} s, server ${fmt(r.restMiB, 0)} → peak ${fmt(r.peakMiB, 0)} MiB`,
    );
  console.log(`baseline SELECT of the parts: ${fmt(baseline, 2)} s`);
  const mibs = (r: Measured) => r.bytes / 2 ** 20 / r.seconds;
  const rows = results.map(
    (r) =>
      `| ${r.what} | ${fmt(r.seconds, 2)} s | ${fmt(mibs(r), 0)} MiB/s | ${fmt(mibs(r) / (SIZE / 2 ** 20 / baseline), 2)} | ${fmt(r.restMiB, 0)} MiB | +${fmt(Math.max(0, r.peakMiB - r.restMiB), 0)} MiB |`,
  );
  writeSection(
    'checkpoints',
    `
## Checkpoints (\`npm run bench:checkpoints\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`npm run bench:checkpoints\` (\`BENCH_CHECKPOINT_MIB\`, default 200).

One checkpoint of ${fmt(SIZE / 2 ** 20, 0)} MiB (random bytes) is uploaded, then ${CONCURRENT_UPLOADS} others at once, then the first
is downloaded by 1, 4 and 8 clients at once (every copy checked byte for byte). "Peak above rest" is the server
process's peak resident memory during that step (VmHWM, reset just before) minus its resident memory at the start
of the step. The baseline is one plain \`SELECT\` of the checkpoint's parts, in order, from the benchmark's own
connection, in the same run: ${fmt(baseline, 2)} s (${fmt(SIZE / 2 ** 20 / baseline, 0)} MiB/s). An upload is stored in parts of 1 MiB as it
arrives and a download is read and sent a part at a time, at most one read ahead of its client, so neither's
memory grows with the checkpoint or with the number of clients.

| step | time | throughput | ÷ baseline | server RSS at start | peak above rest |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}
`,
  );
  console.log('wrote docs/benchmarks.md');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
