/**
 * `npm run bench:checkpoints`: what checkpoints cost, in the database and in a bucket. For each
 * store, one checkpoint of BENCH_CHECKPOINT_MIB (default 200) MiB is uploaded through
 * `PUT /v1/runs/{id}/checkpoints/0`, then four others at once, then the first is downloaded by 1, 4
 * and 8 clients at once: through the server, and from a bucket also by its presigned URL (the
 * clients' default). Reports the time, the server process's CPU and its peak resident memory above
 * its resting size during each (VmHWM, reset before each), beside the baseline of reading the same
 * bytes straight from the store (a SELECT of its parts; a GetObject) from the benchmark's own
 * connection.
 */
import { CreditlabClient } from '@creditlab/client';
import { randomBytes } from 'node:crypto';
import { to as copyTo } from 'pg-copy-streams';
import { rm, writeFile } from 'node:fs/promises';
import { readBinaryCopy } from '../apps/server/src/advantages/binary-copy';
import { parseObjectUrl } from '../apps/server/src/checkpoints/checkpoint-bucket';
import { S3BucketServer } from '../test/support/s3-bucket-server';
import { benchCommand, fmt, machineLine, writeSection } from './support/bench-report';
import { cpuSeconds } from './support/database-cost';
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
  /** The server process's CPU seconds during the step. */
  serverCpu: number;
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
  const cpu0 = await cpuSeconds(pid);
  const t0 = performance.now();
  await work();
  const seconds = (performance.now() - t0) / 1000;
  const serverCpu = (await cpuSeconds(pid)) - cpu0;
  return { what, seconds, bytes, restMiB, peakMiB: mib(procStatusBytes(pid, 'VmHWM')), serverCpu };
}

type Store = 'database' | 'bucket';
const STORES = (process.env.BENCH_CHECKPOINT_STORES ?? 'database,bucket')
  .split(',')
  .map((s): Store => {
    if (s !== 'database' && s !== 'bucket')
      throw new Error(`BENCH_CHECKPOINT_STORES: "database" and/or "bucket", got "${s}"`);
    return s;
  });

/**
 * The steps with checkpoints stored in `store`, and the baseline: the bytes of checkpoint 0 read
 * straight from where they are (its parts by one SELECT; its object by one GetObject), by the
 * benchmark itself in the same run.
 */
async function measureStore(
  store: Store,
  data: Buffer,
): Promise<{ results: Measured[]; baseline: number }> {
  const bucket =
    store === 'bucket' ? await new S3BucketServer('creditlab-bench').start() : undefined;
  const bench = await startBenchServer({
    CREDITLAB_MAX_CHECKPOINT_BYTES: String(SIZE),
    ...bucket?.serverEnv('bench'),
  });
  const pid = bench.server.process.pid as number;
  const client = new CreditlabClient({ url: bench.server.url, apiKey: bench.adminKey });
  const results: Measured[] = [];
  try {
    const { id } = await client.createRun({ name: 'bench checkpoints', env: 'e', method: 'grpo' });
    const first = await measured(pid, 'upload', SIZE, async () => {
      await client.uploadCheckpoint(id, 0, data, 'application/octet-stream');
    });
    results.push(first);
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
    // From a bucket, the clients fetch by the presigned URL unless told to go through the server.
    const ways = bucket
      ? [
          { label: ' through the server', viaServer: true },
          { label: ' by presigned URL', viaServer: false },
        ]
      : [{ label: '', viaServer: true }];
    for (const { label, viaServer } of ways)
      for (const n of CLIENTS)
        results.push(
          await measured(pid, `download × ${n}${label}`, n * SIZE, async () => {
            const copies = await Promise.all(
              Array.from({ length: n }, () => client.downloadCheckpoint(id, 0, { viaServer })),
            );
            for (const c of copies)
              if (!Buffer.from(c.data).equals(data)) throw new Error('downloaded bytes differ');
          }),
        );
    const t0 = performance.now();
    let stored: Buffer;
    if (bucket) {
      const row = await bench.pool.query<{ object_url: string }>(
        'SELECT object_url FROM checkpoints WHERE run_id = $1 AND iteration = 0',
        [id],
      );
      stored = await bucket.read(parseObjectUrl(row.rows[0]?.object_url ?? '').key);
    } else {
      // In binary, as the server reads them: as text they would come in hex, twice their size.
      const client = await bench.pool.connect();
      const parts: Buffer[] = [];
      try {
        const copy = client.query(
          copyTo(`COPY (SELECT p.data FROM checkpoints c
                  JOIN checkpoint_parts p ON p.run_id = c.run_id AND p.upload_id = c.upload_id
                  WHERE c.run_id = '${id}' AND c.iteration = 0 ORDER BY p.ord) TO STDOUT (FORMAT binary)`),
        );
        await readBinaryCopy(copy, 1, (f) => {
          const start = f.start[0] as number;
          parts.push(f.buf.subarray(start, start + (f.length[0] as number)));
        });
      } finally {
        client.release();
      }
      stored = Buffer.concat(parts);
    }
    const baseline = (performance.now() - t0) / 1000;
    if (!stored.equals(data)) throw new Error('stored bytes differ');
    return { results, baseline };
  } finally {
    await bench.close();
    await bucket?.stop();
    if (bucket) await rm(bucket.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const data = randomBytes(SIZE);
  const measuredStores: { store: Store; results: Measured[]; baseline: number }[] = [];
  for (const store of STORES) measuredStores.push({ store, ...(await measureStore(store, data)) });
  const mibs = (r: Measured) => r.bytes / 2 ** 20 / r.seconds;
  const rows: string[] = [];
  for (const { store, results, baseline } of measuredStores) {
    for (const r of results)
      console.log(
        `${store}, ${r.what}: ${fmt(r.seconds, 2)} s, server CPU ${fmt(r.serverCpu, 2)} s, ${fmt(r.restMiB, 0)} → peak ${fmt(r.peakMiB, 0)} MiB`,
      );
    console.log(`${store}: baseline read ${fmt(baseline, 2)} s`);
    rows.push(
      `| ${store} | baseline: ${BASELINE[store]} | ${fmt(baseline, 2)} s | ${fmt(SIZE / 2 ** 20 / baseline, 0)} MiB/s | 1 | | | |`,
      ...results.map(
        (r) =>
          `| ${store} | ${r.what} | ${fmt(r.seconds, 2)} s | ${fmt(mibs(r), 0)} MiB/s | ${fmt(mibs(r) / (SIZE / 2 ** 20 / baseline), 2)} | ${fmt(r.serverCpu, 2)} s | ${fmt(r.restMiB, 0)} MiB | +${fmt(Math.max(0, r.peakMiB - r.restMiB), 0)} MiB |`,
      ),
    );
  }
  writeSection(
    'checkpoints',
    `
## Checkpoints (\`npm run bench:checkpoints\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}.
Command: \`${benchCommand('bench:checkpoints', ['BENCH_CHECKPOINT_MIB', 'BENCH_CHECKPOINT_STORES'])}\` (\`BENCH_CHECKPOINT_MIB\`, default 200; \`BENCH_CHECKPOINT_STORES\`, default database,bucket).

For each store — the database (the default) and an S3-compatible bucket (\`CREDITLAB_CHECKPOINT_BUCKET\`; here
s3rver, an S3 server in Node that keeps objects as files, started by the benchmark on this machine) — one checkpoint
of ${fmt(SIZE / 2 ** 20, 0)} MiB (random bytes) is uploaded, then ${CONCURRENT_UPLOADS} others at once, then the
first is downloaded by 1, 4 and 8 clients at once (every copy checked byte for byte, by the TypeScript client's
\`downloadCheckpoint\`): through the server, and from the bucket also by the presigned URL the server signs
(\`GET …/checkpoints/{k}/url\`, the clients' default), where the bytes go from the store to the client and the
server only signs. "Server CPU" is the server process's CPU time during the step. "Peak above rest" is the
server process's peak resident memory during that step (VmHWM, reset just before) minus its resident memory at the
start of the step. Each store's baseline is its own read of the first checkpoint's bytes, from the benchmark's own
connection, in the same run; "÷ baseline" is a step's throughput over it. An upload is stored in parts as it
arrives (1 MiB rows in the database; 8 MiB parts of a multipart upload in the bucket) and a download is read and
sent a part (or the store's chunk) at a time, at most one read ahead of its client, so neither's memory grows
with the checkpoint or with the number of clients.

| store | step | time | throughput | ÷ baseline | server CPU | server RSS at start | peak above rest |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
`,
  );
  console.log('wrote docs/benchmarks.md');
}

const BASELINE: Record<Store, string> = {
  database: 'one binary COPY of the parts',
  bucket: 'one GetObject',
};

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
