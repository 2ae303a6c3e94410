import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { CreditlabClient } from '@creditlab/client';
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
  } finally {
    await store.start();
  }
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
    for (let i = 0; i < 100 && !second.output().includes('objects of checkpoint uploads'); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
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
  for (let i = 0; i < 50 && !server.output().includes(said); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
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
    let third = 0;
    for (let i = 0; i < 50 && third !== 201; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      third = (await put(capped.url, runId, 61, randomBytes(1000))).status;
    }
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
    let served = 0;
    for (let i = 0; i < 50 && served !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const res = await api(`${capped.url}/v1/runs/${runId}/checkpoints/1`);
      served = res.status;
      await res.arrayBuffer();
    }
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
