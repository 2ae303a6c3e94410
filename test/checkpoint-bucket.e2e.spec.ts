import { createHash, randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { CreditlabClient } from '@creditlab/client';
import { startBrowser } from './support/browser';
import { waitFor } from './support/private-postgres';
import { pytest } from './support/pytest';
import { S3BucketServer } from './support/s3-bucket-server';
import { sqlQuery } from './support/sql-query';
import {
  ADMIN_KEY,
  api,
  gql,
  spawnServer,
  startTestServer,
  type ServerProcess,
} from './support/test-server';

// Checkpoints kept in an S3-compatible bucket (CREDITLAB_CHECKPOINT_BUCKET), behind the same HTTP API:
// a real S3 server (s3rver) on a local port, real uploads and downloads through the server.

const MIB = 1024 * 1024;
const PREFIX = 'lab/ckpt';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const store = new S3BucketServer('creditlab-test');
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let runId: string;

beforeAll(async () => {
  await store.start();
  server = await startTestServer({
    ...store.serverEnv(PREFIX),
    CREDITLAB_MAX_CHECKPOINT_BYTES: String(64 * MIB),
  });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (await client.createRun({ name: 'bucket', env: 'e', method: 'grpo' })).id;
});
afterAll(async () => {
  await server?.stop();
  await store.stop();
});

const checkpointPrefix = (run: string, k: number) => `${PREFIX}/runs/${run}/checkpoints/${k}/`;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const put = (url: string, run: string, k: number, body: Buffer) =>
  api(`${url}/v1/runs/${run}/checkpoints/${k}`, {
    method: 'PUT',
    headers: {
      'content-type': 'application/octet-stream',
      'x-creditlab-checkpoint-format': 'test/v1',
    },
    body,
  });
const rowsOf = (run: string) =>
  sqlQuery<{ iteration: number; object_url: string | null; size_bytes: string }>(
    server.databaseUrl,
    'SELECT iteration, object_url, size_bytes FROM checkpoints WHERE run_id = $1 ORDER BY iteration',
    [run],
  );
const partsOf = async (run: string) =>
  (
    await sqlQuery<{ n: number }>(
      server.databaseUrl,
      'SELECT count(*)::int AS n FROM checkpoint_parts WHERE run_id = $1',
      [run],
    )
  )[0]?.n;

test('checkpoints of one part and of several are one object each in the bucket, downloaded byte for byte through the API', async () => {
  const small = randomBytes(3000);
  const large = randomBytes(20 * MIB + 123); // three parts of 8 MiB: a multipart upload
  for (const [k, bytes] of [
    [1, small],
    [2, large],
  ] as const) {
    const res = await put(server.url, runId, k, bytes);
    expect(res.status).toBe(201);
    const body = (await res.json()) as { objectUrl: string; sha256: string; bytes: number };
    expect(body).toMatchObject({ sha256: sha256(bytes), bytes: bytes.length });
    const keys = await store.keys(checkpointPrefix(runId, k));
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${checkpointPrefix(runId, k)}${UUID}$`));
    expect(body.objectUrl).toBe(`s3://creditlab-test/${keys[0]}`);
    // The object is the checkpoint's bytes, for any tool that reads the bucket directly.
    expect((await store.read(keys[0] as string)).equals(bytes)).toBe(true);

    const down = await api(`${server.url}/v1/runs/${runId}/checkpoints/${k}`);
    expect(down.status).toBe(200);
    expect(down.headers.get('content-length')).toBe(String(bytes.length));
    expect(down.headers.get('x-creditlab-sha256')).toBe(sha256(bytes));
    expect(Buffer.from(await down.arrayBuffer()).equals(bytes)).toBe(true);
  }
  expect(server.output()).toContain(`checkpoints go to s3://creditlab-test/${PREFIX}`);
  // No byte went to the database: its rows say where the objects are.
  expect(await partsOf(runId)).toBe(0);
  const rows = await rowsOf(runId);
  expect(rows.map((r) => [r.iteration, r.size_bytes])).toEqual([
    [1, '3000'],
    [2, String(large.length)],
  ]);
  expect(rows.every((r) => r.object_url?.startsWith(`s3://creditlab-test/${PREFIX}/runs/`))).toBe(
    true,
  );
  const q = await gql<{
    run: { checkpoints: { iteration: number; bytes: number; objectUrl: string }[] };
  }>(server, 'query($id: ID!) { run(id: $id) { checkpoints { iteration bytes objectUrl } } }', {
    id: runId,
  });
  expect(q.data!.run.checkpoints).toEqual(
    rows.map((r) => ({
      iteration: r.iteration,
      bytes: Number(r.size_bytes),
      objectUrl: r.object_url,
    })),
  );
  // The TypeScript client downloads it as it does one in the database.
  expect(Buffer.from((await client.downloadCheckpoint(runId, 2)).data).equals(large)).toBe(true);
});

test('the same bytes again are acknowledged and other bytes refused, leaving the one object', async () => {
  const bytes = randomBytes(9 * MIB);
  expect((await put(server.url, runId, 3, bytes)).status).toBe(201);
  const [key] = await store.keys(checkpointPrefix(runId, 3));
  const again = await put(server.url, runId, 3, bytes);
  expect(again.status).toBe(200);
  const other = Buffer.from(bytes);
  other[5] = (other[5] as number) ^ 1;
  const refused = await put(server.url, runId, 3, other);
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({ error: 'CONFLICT' });
  expect(await store.keys(checkpointPrefix(runId, 3))).toEqual([key]);
  expect((await store.read(key as string)).equals(bytes)).toBe(true);
});

test("a run id typed in capitals puts the checkpoint under the run's lower-case key", async () => {
  const bytes = randomBytes(2000);
  expect((await put(server.url, runId.toUpperCase(), 90, bytes)).status).toBe(201);
  const keys = await store.keys(checkpointPrefix(runId, 90));
  expect(keys).toHaveLength(1);
  expect((await store.read(keys[0] as string)).equals(bytes)).toBe(true);
});

test('an upload cut off mid-body leaves no object and no row', async () => {
  const length = 20 * MIB;
  const req = request(new URL(`${server.url}/v1/runs/${runId}/checkpoints/4`), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      'content-type': 'application/octet-stream',
      'content-length': String(length),
    },
  });
  req.on('error', () => undefined);
  req.write(randomBytes(17 * MIB)); // two parts sent to the bucket's multipart upload, then a cut
  await new Promise((resolve) => setTimeout(resolve, 1500));
  req.destroy();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(await store.keys(checkpointPrefix(runId, 4))).toEqual([]);
  expect((await rowsOf(runId)).map((r) => r.iteration)).not.toContain(4);
  expect((await api(`${server.url}/v1/runs/${runId}/checkpoints/4`)).status).toBe(404);
});

test('a bucket that fails while a part is being sent fails the upload as 503, and nothing is recorded', async () => {
  const sent = { first: randomBytes(17 * MIB), rest: randomBytes(13 * MIB) };
  const req = request(new URL(`${server.url}/v1/runs/${runId}/checkpoints/5`), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      'content-type': 'application/octet-stream',
      'content-length': String(sent.first.length + sent.rest.length),
    },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  req.write(sent.first); // two parts: the multipart upload begins, both are sent
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await store.stop();
  try {
    req.end(sent.rest); // the third part is sent to a store that is gone; the last waits for it
    const { status, body } = await answer;
    expect(status).toBe(503);
    expect(JSON.parse(body)).toMatchObject({ error: 'STORAGE_UNAVAILABLE' });
  } finally {
    await store.start();
  }
  expect((await rowsOf(runId)).map((r) => r.iteration)).not.toContain(5);
  expect(await store.keys(checkpointPrefix(runId, 5))).toEqual([]);
  expect((await put(server.url, runId, 5, sent.first)).status).toBe(201);
});

test('checkpoints in the database and in the bucket are read side by side; a server without the bucket says where one is', async () => {
  // A server of the same database without a bucket: its checkpoints go to the database.
  const plain = await spawnServer({ DATABASE_URL: server.databaseUrl });
  try {
    const inDatabase = randomBytes(5000);
    expect((await put(plain.url, runId, 10, inDatabase)).status).toBe(201);
    expect(await partsOf(runId)).toBe(1);
    // The bucket's server reads the database's checkpoint ...
    const down = await api(`${server.url}/v1/runs/${runId}/checkpoints/10`);
    expect(Buffer.from(await down.arrayBuffer()).equals(inDatabase)).toBe(true);
    const list = (await (await api(`${server.url}/v1/runs/${runId}/checkpoints`)).json()) as {
      iteration: number;
      objectUrl: string | null;
    }[];
    expect(list.find((c) => c.iteration === 10)?.objectUrl).toBeNull();
    // ... and the plain server cannot read the bucket's: it says so, as a 503 with a JSON body.
    const missing = await api(`${plain.url}/v1/runs/${runId}/checkpoints/1`);
    expect(missing.status).toBe(503);
    const said = (await missing.json()) as { error: string; message: string };
    expect(said.error).toBe('STORAGE_UNAVAILABLE');
    expect(said.message).toContain('CREDITLAB_CHECKPOINT_BUCKET');
    expect(said.message).toContain(`s3://creditlab-test/${PREFIX}/runs/${runId}/checkpoints/1/`);
  } finally {
    await plain.stop();
  }
});

test('an object deleted outside Creditlab is a 404 that says so', async () => {
  const bytes = randomBytes(100);
  expect((await put(server.url, runId, 20, bytes)).status).toBe(201);
  const [key] = await store.keys(checkpointPrefix(runId, 20));
  await store.delete(key as string);
  const res = await api(`${server.url}/v1/runs/${runId}/checkpoints/20`);
  expect(res.status).toBe(404);
  expect(((await res.json()) as { message: string }).message).toContain('gone from the bucket');
});

type Readiness = { status: string; warnings: Record<string, string> };

/** /readyz's answer once `done` holds of it (its look at the bucket is taken in the background). */
const readyzUntil = (done: (r: Readiness) => boolean): Promise<Readiness> =>
  waitFor(async () => {
    const r = (await (await fetch(`${server.url}/readyz`)).json()) as Readiness;
    return done(r) && r;
  });

test('while the bucket is down, uploads and downloads fail as 503 and record nothing; once it is back they work', async () => {
  const stored = randomBytes(1000);
  expect((await put(server.url, runId, 30, stored)).status).toBe(201);
  const before = await sqlQuery<{ n: number }>(
    server.databaseUrl,
    "SELECT count(*)::int AS n FROM events WHERE run_id = $1 AND type = 'checkpoint.saved'",
    [runId],
  );
  await store.stop();
  try {
    for (const bytes of [randomBytes(1000), randomBytes(10 * MIB)]) {
      const res = await put(server.url, runId, 31, bytes);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe('STORAGE_UNAVAILABLE');
      expect(body.message).toContain(`s3://creditlab-test/${PREFIX}/`);
      // The store's own words (here the address it is at) are for the log, not the caller.
      expect(body.message).toContain('ECONNREFUSED');
      expect(body.message).not.toContain('127.0.0.1');
    }
    const down = await api(`${server.url}/v1/runs/${runId}/checkpoints/30`);
    expect(down.status).toBe(503);
    expect(((await down.json()) as { error: string }).error).toBe('STORAGE_UNAVAILABLE');
    // The database goes on: the list, and the run's other work.
    expect((await api(`${server.url}/v1/runs/${runId}/checkpoints`)).status).toBe(200);
    // Ready still (ingest and queries work), with a warning that names the bucket, not its address.
    const warned = await readyzUntil((r) => r.warnings.checkpointBucket !== undefined);
    expect(warned.status).toBe('ready');
    expect(warned.warnings.checkpointBucket).toContain(
      `s3://creditlab-test/${PREFIX}/ cannot be used (ECONNREFUSED)`,
    );
    expect(warned.warnings.checkpointBucket).not.toContain('127.0.0.1');
  } finally {
    await store.start();
  }
  await readyzUntil((r) => r.warnings.checkpointBucket === undefined);
  await waitFor(() => server.output().includes('answers again'));
  expect((await rowsOf(runId)).map((r) => r.iteration)).not.toContain(31);
  expect(
    await sqlQuery<{ n: number }>(
      server.databaseUrl,
      "SELECT count(*)::int AS n FROM events WHERE run_id = $1 AND type = 'checkpoint.saved'",
      [runId],
    ),
  ).toEqual(before);
  expect((await put(server.url, runId, 31, randomBytes(1000))).status).toBe(201);
  const down = await api(`${server.url}/v1/runs/${runId}/checkpoints/30`);
  expect(Buffer.from(await down.arrayBuffer()).equals(stored)).toBe(true);
});

test('uploads this database recorded and never finished are removed from the bucket when a server starts, once over an hour old; other objects stay', async () => {
  const upload = (n: number) =>
    `${String(n).repeat(8)}-${String(n).repeat(4)}-4${String(n).repeat(3)}-8${String(n).repeat(3)}-${String(n).repeat(12)}`;
  const record = (uploadId: string, key: string, hoursAgo: number) =>
    sqlQuery(
      server.databaseUrl,
      `INSERT INTO checkpoint_bucket_uploads (run_id, upload_id, object_url, started_at)
       VALUES ($1, $2, $3, now() - make_interval(hours => $4))`,
      [runId, uploadId, `s3://creditlab-test/${key}`, hoursAgo],
    );
  // One the store will not remove (s3rver cannot abort a multipart upload), older still: the
  // sweep logs it, keeps its record for next time, and goes on to the others.
  const stuck = `${checkpointPrefix(runId, 39)}${upload(6)}`;
  await record(upload(6), stuck, 3);
  await sqlQuery(
    server.databaseUrl,
    `UPDATE checkpoint_bucket_uploads SET multipart_upload_id = 'no-such-upload' WHERE upload_id = $1`,
    [upload(6)],
  );
  // A server killed between making the object and writing its row, two hours ago.
  const abandoned = `${checkpointPrefix(runId, 40)}${upload(7)}`;
  await store.put(abandoned, randomBytes(10));
  await record(upload(7), abandoned, 2);
  // An upload in progress (begun now).
  const inProgress = `${checkpointPrefix(runId, 41)}${upload(8)}`;
  await store.put(inProgress, randomBytes(10));
  await record(upload(8), inProgress, 0);
  // Another deployment's checkpoint under the same prefix, as old: this database never recorded it.
  const foreign = `${checkpointPrefix(runId, 42)}${upload(9)}`;
  await store.put(foreign, randomBytes(10));
  await store.age(foreign, 2 * 3600);
  // A stored checkpoint whose record was left (it cannot be, but if it were): its object stays.
  const [stored] = await sqlQuery<{ upload_id: string; object_url: string }>(
    server.databaseUrl,
    'SELECT upload_id, object_url FROM checkpoints WHERE run_id = $1 AND iteration = 1',
    [runId],
  );
  const storedKey = stored!.object_url.replace('s3://creditlab-test/', '');
  await record(stored!.upload_id, storedKey, 2);

  const second = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    ...store.serverEnv(PREFIX),
  });
  try {
    // The sweep runs once the server has started; its log line comes after its deletes.
    await waitFor(() => second.output().includes('objects of checkpoint uploads'));
    expect(second.output()).toContain('deleted 1 objects of checkpoint uploads');
    expect(second.output()).toContain(`could not remove abandoned upload ${upload(6)}`);
  } finally {
    await second.stop();
  }
  expect(await store.keys(checkpointPrefix(runId, 40))).toEqual([]);
  expect(await store.keys(checkpointPrefix(runId, 41))).toEqual([inProgress]);
  expect(await store.keys(checkpointPrefix(runId, 42))).toEqual([foreign]);
  expect(await store.keys(storedKey)).toEqual([storedKey]);
  const left = await sqlQuery<{ upload_id: string }>(
    server.databaseUrl,
    'SELECT upload_id FROM checkpoint_bucket_uploads WHERE run_id = $1 AND upload_id = ANY($2::uuid[])',
    [runId, [upload(6), upload(7), upload(8), stored!.upload_id]],
  );
  expect(left.map((r) => r.upload_id).sort()).toEqual([upload(6), upload(8)]);
});

test('a bucket the server cannot use stops its start, naming the setting and what the store said', async () => {
  for (const [env, said] of [
    [
      store.serverEnv(PREFIX, { accessKeyId: 'WRONG', secretAccessKey: 'WRONG' }),
      /403|InvalidAccessKeyId|Forbidden/,
    ],
    [
      { ...store.serverEnv(PREFIX), CREDITLAB_CHECKPOINT_BUCKET: 's3://no-such-bucket' },
      /404|NoSuchBucket|NotFound/,
    ],
  ] as const) {
    const failed = await spawnServer({ DATABASE_URL: server.databaseUrl, ...env }).then(
      (s) => s.stop().then(() => 'started'),
      (e: Error) => e.message,
    );
    expect(failed).toContain('CREDITLAB_CHECKPOINT_BUCKET: cannot use');
    expect(failed).toMatch(said);
  }
});

test('a store that accepts connections and never answers fails the start within the timeout', async () => {
  const held: Socket[] = [];
  const silent = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const started = Date.now();
    const failed = await spawnServer({
      DATABASE_URL: server.databaseUrl,
      ...store.serverEnv(PREFIX),
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      CREDITLAB_CHECKPOINT_BUCKET_TIMEOUT_SECONDS: '2',
    }).then(
      (s) => s.stop().then(() => 'started'),
      (e: Error) => e.message,
    );
    expect(failed).toContain('CREDITLAB_CHECKPOINT_BUCKET: cannot use');
    expect(failed).toContain('no answer within 2 s');
    expect(Date.now() - started).toBeLessThan(60_000);
  } finally {
    for (const socket of held) socket.destroy();
    silent.close();
  }
});

test("an object whose length is not its row's is not served as the checkpoint", async () => {
  const bytes = randomBytes(2000);
  expect((await put(server.url, runId, 50, bytes)).status).toBe(201);
  const [key] = await store.keys(checkpointPrefix(runId, 50));
  await store.put(key as string, bytes.subarray(0, 1000)); // changed behind Creditlab's back
  const res = await api(`${server.url}/v1/runs/${runId}/checkpoints/50`);
  expect(res.status).toBe(500);
  // The log line of an internal error reaches the test's pipe shortly after the answer.
  const said = 'holds 1000 bytes where its row says 2000';
  await waitFor(() => server.output().includes(said));
  expect(server.output()).toContain(said);
  // Bytes changed but not their length: served, and the client's digest check refuses them.
  const changed = Buffer.from(bytes);
  changed[0] = (changed[0] as number) ^ 1;
  await store.put(key as string, changed);
  await expect(client.downloadCheckpoint(runId, 50)).rejects.toThrow(
    /downloaded bytes' SHA-256 is [0-9a-f]{64}, the server recorded/,
  );
});

test('checkpoint uploads and downloads in progress are capped per process, all keys together: one more is 503 and told when to retry', async () => {
  const capped = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    ...store.serverEnv(PREFIX),
    CREDITLAB_CHECKPOINT_UPLOADS: '1',
    CREDITLAB_CHECKPOINT_DOWNLOADS: '1',
  });
  try {
    const first = request(new URL(`${capped.url}/v1/runs/${runId}/checkpoints/60`), {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        'content-type': 'application/octet-stream',
        'content-length': '2000',
      },
    });
    first.on('error', () => undefined);
    first.write(randomBytes(1000)); // in progress: the rest is never sent
    await new Promise((resolve) => setTimeout(resolve, 500));
    const second = await put(capped.url, runId, 61, randomBytes(1000));
    expect(second.status).toBe(503);
    expect(second.headers.get('retry-after')).toBe('5');
    const said = (await second.json()) as { error: string; message: string };
    expect(said.error).toBe('SERVER_BUSY');
    expect(said.message).toContain('CREDITLAB_CHECKPOINT_UPLOADS=1');
    first.destroy();
    // Its place is given back once it ends.
    const third = await waitFor(async () => {
      const status = (await put(capped.url, runId, 61, randomBytes(1000))).status;
      return status !== 503 && status;
    });
    expect(third).toBe(201);

    // Downloads likewise: one left unread holds the only place.
    const reading = request(new URL(`${capped.url}/v1/runs/${runId}/checkpoints/2`), {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const held = new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      reading.on('response', resolve);
      reading.on('error', reject);
    });
    reading.end();
    const slow = await held;
    slow.pause(); // 20 MiB: far more than the sockets' buffers, so the download stays in progress
    const refused = await api(`${capped.url}/v1/runs/${runId}/checkpoints/1`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { message: string }).message).toContain(
      'CREDITLAB_CHECKPOINT_DOWNLOADS=1',
    );
    reading.destroy();
    const served = await waitFor(async () => {
      const res = await api(`${capped.url}/v1/runs/${runId}/checkpoints/1`);
      await res.arrayBuffer();
      return res.status !== 503 && res.status;
    });
    expect(served).toBe(200);
  } finally {
    await capped.stop();
  }
});

test('downloads whose clients leave at once give their store connections back: the next download is served', async () => {
  const bytes = randomBytes(4 * MIB);
  expect((await put(server.url, runId, 70, bytes)).status).toBe(201);
  // More than the SDK's 50 connections to the store, each download left while the server asks the
  // store for its object (before the first byte of the answer).
  for (let i = 0; i < 80; i++) {
    const controller = new AbortController();
    const leaving = api(`${server.url}/v1/runs/${runId}/checkpoints/70`, {
      signal: controller.signal,
    }).catch(() => undefined);
    setTimeout(() => controller.abort(), 2 + (i % 5));
    await leaving;
  }
  const down = await api(`${server.url}/v1/runs/${runId}/checkpoints/70`, {
    signal: AbortSignal.timeout(20_000),
  });
  expect(Buffer.from(await down.arrayBuffer()).equals(bytes)).toBe(true);
});

type DownloadUrl = {
  iteration: number;
  sha256: string;
  bytes: number;
  objectUrl: string | null;
  url: string | null;
  expiresAt: string | null;
};
const downloadUrl = (url: string, run: string, k: number, key?: string) =>
  api(`${url}/v1/runs/${run}/checkpoints/${k}/url`, {}, key);

test("a checkpoint's presigned URL downloads it from the bucket with no key; one in the database has none", async () => {
  const bytes = randomBytes(10 * MIB + 7);
  expect((await put(server.url, runId, 80, bytes)).status).toBe(201);
  const before = Date.now();
  const res = await downloadUrl(server.url, runId, 80);
  expect(res.status).toBe(200);
  // A URL that is a key to the checkpoint is kept by no cache on the way.
  expect(res.headers.get('cache-control')).toBe('no-store');
  const link = (await res.json()) as DownloadUrl;
  const [key] = await store.keys(checkpointPrefix(runId, 80));
  expect(link).toMatchObject({
    iteration: 80,
    sha256: sha256(bytes),
    bytes: bytes.length,
    objectUrl: `s3://creditlab-test/${key}`,
  });
  // Signed for the endpoint the server reaches the store at, valid for the default 900 s.
  expect(link.url!.startsWith(`${store.endpoint}/creditlab-test/${key}?`)).toBe(true);
  expect(new URL(link.url!).searchParams.get('X-Amz-Expires')).toBe('900');
  const expires = Date.parse(link.expiresAt!);
  expect(expires).toBeGreaterThanOrEqual(before + 899_000);
  expect(expires).toBeLessThanOrEqual(Date.now() + 901_000);
  const direct = await fetch(link.url!); // no Authorization header: the URL is its own
  expect(direct.status).toBe(200);
  expect(Buffer.from(await direct.arrayBuffer()).equals(bytes)).toBe(true);
  // A URL naming a key the store does not know is refused. (s3rver checks no SigV4 signature: the
  // signatures themselves are checked in apps/server/test/presigned-url.unit.spec.ts.)
  const unsigned = new URL(link.url!);
  unsigned.searchParams.set(
    'X-Amz-Credential',
    unsigned.searchParams.get('X-Amz-Credential')!.replace('S3RVER', 'OTHER'),
  );
  expect((await fetch(unsigned)).status).toBe(403);

  // A checkpoint whose bytes are in the database has no such URL: the server's download serves it.
  const plain = await spawnServer({ DATABASE_URL: server.databaseUrl });
  try {
    expect((await put(plain.url, runId, 81, randomBytes(2000))).status).toBe(201);
    const inDatabase = (await (await downloadUrl(server.url, runId, 81)).json()) as DownloadUrl;
    expect(inDatabase).toMatchObject({
      iteration: 81,
      bytes: 2000,
      objectUrl: null,
      url: null,
      expiresAt: null,
    });
    // A server without the bucket cannot sign for the bucket's checkpoint, and says where it is.
    const unsignable = await downloadUrl(plain.url, runId, 80);
    expect(unsignable.status).toBe(503);
    expect(((await unsignable.json()) as { message: string }).message).toContain(
      'CREDITLAB_CHECKPOINT_BUCKET',
    );
  } finally {
    await plain.stop();
  }
  // A file name for the store's answer is a plain one: nothing to quote, no path.
  for (const bad of ['../etc/passwd', 'a"b.bin', '.hidden', 'x'.repeat(201)]) {
    const refused = await api(
      `${server.url}/v1/runs/${runId}/checkpoints/80/url?filename=${encodeURIComponent(bad)}`,
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toContain('filename');
  }
  const missing = await downloadUrl(server.url, runId, 999);
  expect(missing.status).toBe(404);
  expect(((await missing.json()) as { message: string }).message).toContain('no checkpoint 999');
});

test('presigned URLs name CREDITLAB_CHECKPOINT_URL_ENDPOINT when set and stop working once CREDITLAB_CHECKPOINT_URL_SECONDS have passed', async () => {
  const bytes = randomBytes(5000);
  expect((await put(server.url, runId, 82, bytes)).status).toBe(201);
  // The same store under another name, as clients outside a private network would reach it.
  const outside = `http://localhost:${store.port}`;
  const signing = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    ...store.serverEnv(PREFIX),
    CREDITLAB_CHECKPOINT_URL_ENDPOINT: outside,
    CREDITLAB_CHECKPOINT_URL_SECONDS: '6', // long enough for the first fetch on a loaded machine
  });
  try {
    const link = (await (await downloadUrl(signing.url, runId, 82)).json()) as DownloadUrl;
    expect(link.url!.startsWith(`${outside}/creditlab-test/${PREFIX}/runs/${runId}/`)).toBe(true);
    expect(new URL(link.url!).searchParams.get('X-Amz-Expires')).toBe('6');
    const soon = await fetch(link.url!);
    expect(Buffer.from(await soon.arrayBuffer()).equals(bytes)).toBe(true);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Date.parse(link.expiresAt!) - Date.now()) + 1500),
    );
    const late = await fetch(link.url!);
    expect(late.status).toBe(403);
    expect(await late.text()).toContain('Request has expired');
  } finally {
    await signing.stop();
  }
});

test('the TypeScript client downloads from the presigned URL with no key, and through the server when the bucket cannot be reached', async () => {
  const bytes = randomBytes(3 * MIB);
  expect((await put(server.url, runId, 83, bytes)).status).toBe(201);
  const asked: { url: string; authorization: string | null }[] = [];
  const watching = (base: string) =>
    new CreditlabClient({
      url: base,
      apiKey: ADMIN_KEY,
      fetch: (input, init) => {
        asked.push({
          url: String(input),
          authorization: new Headers(init?.headers).get('authorization'),
        });
        return fetch(input, init);
      },
    });
  const got = await watching(server.url).downloadCheckpoint(runId, 83);
  expect(Buffer.from(got.data).equals(bytes)).toBe(true);
  expect(got.sha256).toBe(sha256(bytes));
  expect(asked.map((a) => [new URL(a.url).origin, a.authorization !== null])).toEqual([
    [server.url, true], // the URL, asked with the key
    [store.endpoint, false], // the bytes, from the store, without it
  ]);

  // Signed for an endpoint this machine cannot reach: the server's own download serves the bytes.
  const unreachable = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    ...store.serverEnv(PREFIX),
    CREDITLAB_CHECKPOINT_URL_ENDPOINT: 'http://127.0.0.1:1',
  });
  try {
    asked.length = 0;
    const fallback = await watching(unreachable.url).downloadCheckpoint(runId, 83);
    expect(Buffer.from(fallback.data).equals(bytes)).toBe(true);
    expect(asked).toHaveLength(3);
    expect(new URL(asked[0]!.url).pathname).toBe(`/v1/runs/${runId}/checkpoints/83/url`);
    expect(asked[1]!.url.startsWith('http://127.0.0.1:1/creditlab-test/')).toBe(true);
    expect(new URL(asked[2]!.url).pathname).toBe(`/v1/runs/${runId}/checkpoints/83`);
  } finally {
    await unreachable.stop();
  }
  // viaServer skips the bucket.
  asked.length = 0;
  await watching(server.url).downloadCheckpoint(runId, 83, { viaServer: true });
  expect(asked.map((a) => new URL(a.url).pathname)).toEqual([`/v1/runs/${runId}/checkpoints/83`]);
});

test('the web app saves a bucket checkpoint from its presigned URL, under the run’s name, one in the database through the server, and one whose bucket it cannot reach through the server', async () => {
  const run = (await client.createRun({ name: 'web run', env: 'e', method: 'grpo' })).id;
  const inBucket = randomBytes(6 * MIB);
  const inDatabase = randomBytes(4000);
  expect((await put(server.url, run, 1, inBucket)).status).toBe(201);
  const plain = await spawnServer({ DATABASE_URL: server.databaseUrl });
  try {
    expect((await put(plain.url, run, 2, inDatabase)).status).toBe(201);
  } finally {
    await plain.stop();
  }
  // The page lets frames from the bucket, where the app starts the download, and nothing else.
  const page0 = await fetch(`${server.url}/`, { headers: { accept: 'text/html' } });
  expect(page0.headers.get('content-security-policy')).toContain(`frame-src ${store.endpoint};`);
  // Signed for an address this browser cannot reach.
  const unreachable = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    ...store.serverEnv(PREFIX),
    CREDITLAB_CHECKPOINT_URL_ENDPOINT: 'http://127.0.0.1:1',
  });
  const browser = await startBrowser();
  try {
    const page = await browser.newPage();
    const asked: string[] = [];
    page.on('request', (r) => asked.push(r.url()));
    const openRun = async (base: string) => {
      await page.goto(`${base}/`);
      await page.getByLabel('API key').fill(ADMIN_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('runs-table').waitFor();
      await page.goto(`${base}/runs/${run}`);
      await page.getByTestId('checkpoints-table').locator('tbody tr').nth(1).waitFor();
      asked.length = 0;
    };
    const saved = async (row: number) => {
      const [file] = await Promise.all([
        page.waitForEvent('download'),
        page
          .getByTestId('checkpoints-table')
          .locator('tbody tr')
          .nth(row)
          .getByRole('button', { name: 'download' })
          .click(),
      ]);
      const to = `${process.env.TMPDIR ?? '/tmp'}/web-download-${row}-${process.pid}`;
      await file.saveAs(to);
      const bytes = await readFile(to);
      await rm(to);
      return { name: file.suggestedFilename(), bytes };
    };
    const viaServer = (k: number) =>
      asked.some((url) => new URL(url).pathname === `/v1/runs/${run}/checkpoints/${k}`);

    await openRun(server.url);
    const fromBucket = await saved(0);
    expect(fromBucket.name).toBe('web-run-checkpoint-1.bin');
    expect(fromBucket.bytes.equals(inBucket)).toBe(true);
    // The URL was asked for, and the bytes did not come through the server (the frame's own
    // request, in another process, is not seen here).
    expect(asked.some((url) => url.includes(`/checkpoints/1/url?filename=`))).toBe(true);
    expect(viaServer(1)).toBe(false);
    const fromDatabase = await saved(1);
    expect(fromDatabase.name).toBe('web-run-checkpoint-2.bin');
    expect(fromDatabase.bytes.equals(inDatabase)).toBe(true);
    expect(viaServer(2)).toBe(true);

    // A bucket the browser cannot reach: the frame shows an error page, and the app, still there,
    // fetches the bytes through the server instead.
    await openRun(unreachable.url);
    const fallback = await saved(0);
    expect(fallback.bytes.equals(inBucket)).toBe(true);
    expect(viaServer(1)).toBe(true);
    expect(page.url()).toBe(`${unreachable.url}/runs/${run}`);
    expect(asked.every((url) => !url.includes(ADMIN_KEY))).toBe(true);
    expect(browser.errors.filter((e) => !e.includes('127.0.0.1:1'))).toEqual([]);
  } finally {
    await browser.close();
    await unreachable.stop();
  }
});

test("the Python client's checkpoint tests pass against the bucket, its downloads coming from presigned URLs", async () => {
  const { code, output } = await pytest('test_checkpoints.py', server, {
    CREDITLAB_PYTEST_CHECKPOINT_STORE: 'bucket',
  });
  if (code !== 0) throw new Error(`pytest test_checkpoints.py exited ${code}:\n${output}`);
  expect(output).toMatch(/\d+ passed/);
});
