import { CreditlabClient, newEventId } from '@creditlab/client';
import { request, type ClientRequest } from 'node:http';
import { connect } from 'node:net';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * Clients that open an upload and then dawdle: they hold no connection or lock before their
 * first event has arrived, stall out with 408, cannot open more than their share of uploads, and
 * never starve the reads of anybody else.
 */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
beforeAll(async () => {
  server = await startTestServer({
    CREDITLAB_INGEST_IDLE_SECONDS: '3',
    CREDITLAB_DOWNLOAD_IDLE_SECONDS: '3',
    CREDITLAB_INGEST_CONCURRENCY_PER_KEY: '6',
    CREDITLAB_CHECKPOINT_CONCURRENCY_PER_KEY: '2',
    CREDITLAB_INGEST_CONNECTIONS: '4',
    CREDITLAB_DB_CONNECTIONS: '4', // fewer than the uploads below: shared, they would starve reads
  });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
});
afterAll(() => server.stop());

const line = (iteration: number) =>
  JSON.stringify({
    id: newEventId(),
    type: 'metrics.logged',
    data: { iteration, metrics: { loss: 1 } },
  }) + '\n';

interface Upload {
  req: ClientRequest;
  answer: Promise<{ status: number; body: Record<string, unknown> }>;
}

/**
 * Opens a request to `path`, sends `first` (maybe nothing) and keeps the body open; chunked unless
 * `headers` declare a length.
 */
function openBody(
  method: string,
  path: string,
  headers: Record<string, string>,
  first: string,
): Upload {
  const req = request(new URL(`${server.url}${path}`), {
    method,
    headers: {
      ...('content-length' in headers ? {} : { 'transfer-encoding': 'chunked' }),
      ...headers,
      authorization: `Bearer ${ADMIN_KEY}`,
    },
  });
  const answer = new Promise<{ status: number; body: Record<string, unknown> }>(
    (resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') }),
        );
      });
      req.on('error', reject);
    },
  );
  answer.catch(() => undefined);
  req.flushHeaders();
  if (first) req.write(first);
  return { req, answer };
}

/** An ingest request that sent `first`, or with `checkpoint` the upload of that checkpoint. */
function openUpload(runId: string, first: string, checkpoint?: number): Upload {
  return checkpoint === undefined
    ? openBody(
        'POST',
        `/v1/runs/${runId}/events`,
        { 'content-type': 'application/x-ndjson' },
        first,
      )
    : openBody(
        'PUT',
        `/v1/runs/${runId}/checkpoints/${checkpoint}`,
        { 'content-type': 'application/octet-stream' },
        first,
      );
}

const appendNow = (runId: string) =>
  api(`${server.url}/v1/runs/${runId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: line(9),
  });

test('an upload that sent no event yet holds no lock: another append to the same run goes through', async () => {
  const { id } = await client.createRun({ name: 'no lock yet', env: 'e', method: 'grpo' });
  const idle = openUpload(id, '\n'); // a blank line: nothing to parse
  const res = await appendNow(id);
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ accepted: 1, lastSeq: 2 });
  idle.req.destroy();
});

test('a body that brings no new event for the idle limit gets 408, and nothing of it is stored', async () => {
  const { id } = await client.createRun({ name: 'stalls', env: 'e', method: 'grpo' });
  const stalled = openUpload(id, line(0));
  // Blank lines do not count as progress.
  const blanks = setInterval(() => stalled.req.write('\n'), 500);
  const answer = await stalled.answer.finally(() => clearInterval(blanks));
  expect(answer.status).toBe(408);
  expect(answer.body).toMatchObject({ error: 'REQUEST_TIMEOUT', idleSeconds: 3 });
  const events = await gql<{ run: { lastSeq: number } }>(
    server,
    'query($id: ID!) { run(id: $id) { lastSeq } }',
    { id },
  );
  expect(events.data?.run.lastSeq).toBe(1); // only run.created
  expect((await appendNow(id)).status).toBe(200); // and the run's lock is free again
});

/** A JSON request that sends `first` and then nothing more, with the answer it gets. */
function stalledJson(path: string, first: string, length?: number) {
  const { req, answer } = openBody(
    'POST',
    path,
    {
      'content-type': 'application/json',
      ...(length === undefined ? {} : { 'content-length': String(length) }),
    },
    first,
  );
  return answer.finally(() => req.destroy());
}

test('a JSON body that goes quiet gets 408 rather than holding its connection for minutes', async () => {
  const { status, body } = await stalledJson('/graphql', '{"query": "{ viewer');
  expect(status).toBe(408);
  expect(body).toMatchObject({ error: 'REQUEST_TIMEOUT', idleSeconds: 3 });
});

test('a JSON body declared larger than the limit is refused at once, not read first', async () => {
  // Read first, it would have ended in a 408.
  const { status, body } = await stalledJson('/v1/runs', '{"name": "', 3 * 1024 * 1024);
  expect(status).toBe(413);
  expect(body).toMatchObject({ error: 'PAYLOAD_TOO_LARGE', limit: 2 * 1024 * 1024 });
});

test('one key may have only so many uploads open; reads of other runs are never starved', async () => {
  const runs = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      client.createRun({ name: `slow ${i}`, env: 'e', method: 'grpo' }),
    ),
  );
  // Six uploads that each sent one event and then dawdle: they hold every ingest connection.
  const uploads = runs.map((r) => openUpload(r.id, line(0)));
  await new Promise((r) => setTimeout(r, 500));
  const seventh = await appendNow(runs[0]!.id);
  expect(seventh.status).toBe(429);
  expect(seventh.headers.get('retry-after')).toBe('1');
  expect(await seventh.json()).toMatchObject({
    error: 'TOO_MANY_CONCURRENT_REQUESTS',
    limit: 6,
  });
  // Reads use their own connections.
  const read = await gql<{ runs: { nodes: unknown[] } }>(
    server,
    '{ runs(first: 5) { nodes { id } } }',
  );
  expect(read.errors).toBeUndefined();
  for (const u of uploads) u.req.end();
  const answers = await Promise.all(uploads.map((u) => u.answer));
  expect(answers.map((a) => a.status)).toEqual(runs.map(() => 200));
});

test('a checkpoint upload that goes quiet gets 408, and a key has only its share of uploads open at once', async () => {
  const { id } = await client.createRun({ name: 'slow checkpoints', env: 'e', method: 'grpo' });
  const open = [openUpload(id, 'half a checkpoint', 1), openUpload(id, 'another half', 2)];
  // Once both are in progress, the key's third is refused at once, before any of its body is read.
  // Asked with an empty body until then: with a slot free that is a 400, and nothing is stored.
  const third = () =>
    api(`${server.url}/v1/runs/${id}/checkpoints/3`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: '',
    });
  // A probe holds a slot while it is answered: sent before both uploads are in, it could take one.
  await new Promise((resolve) => setTimeout(resolve, 500));
  let refused = await third();
  for (let i = 0; i < 100 && refused.status === 400; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    refused = await third();
  }
  expect(refused.status).toBe(429);
  expect(await refused.json()).toMatchObject({
    message: expect.stringContaining('already has 2 checkpoint uploads in progress'),
  });
  for (const upload of open) {
    const answer = await upload.answer;
    expect(answer.status).toBe(408);
    expect(answer.body).toMatchObject({ error: 'REQUEST_TIMEOUT', idleSeconds: 3 });
  }
  // Nothing of them was stored, and the key's uploads are free again.
  const list = await api(`${server.url}/v1/runs/${id}/checkpoints`);
  expect(await list.json()).toEqual([]);
  const again = await api(`${server.url}/v1/runs/${id}/checkpoints/3`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: 'a whole checkpoint',
  });
  expect(again.status).toBe(201);
});

/** A new run's checkpoint 0 of `mib` MiB: its download path and bytes. */
async function checkpointToDownload(name: string, mib: number) {
  const { id } = await client.createRun({ name, env: 'e', method: 'grpo' });
  const bytes = Buffer.alloc(mib * 1024 * 1024, mib);
  await client.uploadCheckpoint(id, 0, bytes, 'test/v1');
  return { path: `${server.url}/v1/runs/${id}/checkpoints/0`, bytes };
}

test('a key has only its share of checkpoint downloads open, however slowly its clients read', async () => {
  // Larger than the sockets buffers: a client that reads slowly keeps its download in progress.
  const { path, bytes } = await checkpointToDownload('slow downloads', 64);
  /**
   * A download read at 1.5 MiB a second, far slower than the server sends: resolves with its status
   * once the headers are in.
   */
  const slow = () =>
    new Promise<{ status: number; req: ClientRequest }>((resolve, reject) => {
      const req = request(path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }, (res) => {
        res.pause();
        let allowed = 0;
        res.on('data', (c: Buffer) => {
          allowed -= c.length;
          if (allowed <= 0) res.pause();
        });
        const refill = setInterval(() => {
          allowed = 1.5 * 1024 * 1024;
          res.resume();
        }, 1000);
        res.once('close', () => clearInterval(refill));
        resolve({ status: res.statusCode ?? 0, req });
      });
      req.on('error', reject);
      req.end();
    });
  const open = [await slow(), await slow()];
  try {
    await downloadsLimited(path, open, bytes);
  } finally {
    for (const d of open) d.req.destroy(); // a download in progress would hold the server's shutdown
  }
});

test('downloads whose clients read nothing for the idle limit are cut off, and their places freed', async () => {
  const { path, bytes } = await checkpointToDownload('stalled download', 40);
  /** A download that reads nothing after its headers (the sockets' buffers fill, then nothing moves). */
  const stalled = () =>
    new Promise<ClientRequest>((resolve, reject) => {
      const req = request(path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }, (res) => {
        res.pause();
        resolve(req);
      });
      req.on('error', reject);
      req.end();
    });
  const open = [await stalled(), await stalled()];
  const started = Date.now();
  try {
    // The key's two places are taken; once the server gives up on its stalled clients, they are free.
    let next = await api(path);
    expect(next.status).toBe(429);
    for (let i = 0; i < 120 && next.status === 429; i++) {
      await next.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 250));
      next = await api(path);
    }
    expect(next.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000); // this server's idle limit
    expect(Buffer.from(await next.arrayBuffer()).equals(bytes)).toBe(true);
  } finally {
    for (const req of open) req.destroy();
  }
});

test('a download whose client resets while its key and run are checked frees its place', async () => {
  const { path, bytes } = await checkpointToDownload('reset downloads', 1);
  const { hostname, port, pathname } = new URL(path);
  // A fresh key: its lookup goes to the database, which the reset lands during.
  const created = await gql<{ createApiKey: { key: string } }>(
    server,
    'mutation { createApiKey(input: { project: "default", role: read }) { key } }',
  );
  const key = created.data!.createApiKey.key;
  for (let i = 0; i < 4; i++) {
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(`GET ${pathname} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        setImmediate(() => {
          socket.resetAndDestroy();
          resolve();
        });
      });
      socket.on('error', () => undefined);
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  // Four downloads given up, more than the key's two places: both are free.
  let statuses: number[] = [];
  for (let i = 0; i < 20; i++) {
    const answers = await Promise.all([api(path, {}, key), api(path, {}, key)]);
    statuses = answers.map((r) => r.status);
    for (const r of answers)
      if (r.status === 200) expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);
      else await r.arrayBuffer();
    if (statuses.every((s) => s === 200)) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(statuses).toEqual([200, 200]);
});

async function downloadsLimited(
  path: string,
  open: { status: number; req: ClientRequest }[],
  bytes: Buffer,
): Promise<void> {
  expect(open.map((d) => d.status)).toEqual([200, 200]);
  const third = await api(path);
  expect(third.status).toBe(429);
  expect(await third.json()).toMatchObject({
    error: 'TOO_MANY_CONCURRENT_REQUESTS',
    message: expect.stringContaining('already has 2 checkpoint downloads in progress'),
  });
  // A download given up frees its place.
  open[0]!.req.destroy();
  let next = await api(path);
  for (let i = 0; i < 50 && next.status === 429; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    next = await api(path);
  }
  expect(next.status).toBe(200);
  expect(Buffer.from(await next.arrayBuffer()).equals(bytes)).toBe(true);
}
