import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';
import { CreditlabClient } from '@creditlab/client';

let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let runId: string;

beforeAll(async () => {
  server = await startTestServer({ CREDITLAB_MAX_CHECKPOINT_BYTES: '4096' });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (await client.createRun({ name: 'ckpt', env: 'e', method: 'grpo' })).id;
});
afterAll(() => server.stop());

const put = (iteration: number, body: Uint8Array, headers: Record<string, string> = {}) =>
  api(`${server.url}/v1/runs/${runId}/checkpoints/${iteration}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', ...headers },
    body,
  });

test('an upload is stored byte for byte, listed, recorded as checkpoint.saved once, and downloadable', async () => {
  const bytes = new Uint8Array(3000).map((_, i) => (i * 7) % 251);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const first = await put(4, bytes, { 'x-creditlab-checkpoint-format': 'test/v1' });
  expect(first.status).toBe(201);
  expect(await first.json()).toMatchObject({
    iteration: 4,
    sha256,
    bytes: 3000,
    format: 'test/v1',
  });
  // the same bytes again (a retried upload): acknowledged, nothing new
  expect((await put(4, bytes, { 'x-creditlab-checkpoint-format': 'test/v1' })).status).toBe(200);
  const down = await client.downloadCheckpoint(runId, 4);
  expect(Buffer.from(down.data).equals(Buffer.from(bytes))).toBe(true);
  expect(down).toMatchObject({ format: 'test/v1', sha256 });
  const res = await gql<{
    run: {
      checkpoints: { iteration: number; sha256: string }[];
      events: { nodes: { data: unknown }[] };
    };
  }>(
    server,
    `query($id: ID!) { run(id: $id) { checkpoints { iteration sha256 bytes path }
       events(types: [CHECKPOINT_SAVED]) { nodes { data } } } }`,
    { id: runId },
  );
  expect(res.data!.run.checkpoints).toEqual([
    { iteration: 4, sha256, bytes: 3000, path: `/v1/runs/${runId}/checkpoints/4` },
  ]);
  expect(res.data!.run.events.nodes).toEqual([
    {
      data: {
        iteration: 4,
        uri: `/v1/runs/${runId}/checkpoints/4`,
        sha256,
        bytes: 3000,
        format: 'test/v1',
      },
    },
  ]);
});

test('checkpoints are immutable; bad uploads say what is wrong', async () => {
  await put(7, new Uint8Array([1, 2, 3]));
  const other = await put(7, new Uint8Array([1, 2, 4]));
  expect(other.status).toBe(409);
  expect(await other.json()).toMatchObject({
    error: 'CONFLICT',
    message: expect.stringContaining('immutable'),
  });
  const big = await put(8, new Uint8Array(5000));
  expect(big.status).toBe(413);
  expect(await big.json()).toMatchObject({
    message: expect.stringContaining('CREDITLAB_MAX_CHECKPOINT_BYTES'),
  });
  expect((await put(9, new Uint8Array(0))).status).toBe(400);
  const missing = await api(`${server.url}/v1/runs/${runId}/checkpoints/5`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({
    message: expect.stringMatching(/no checkpoint 5; it has 4, 7$/),
  });
  // Paths route whatever their case, and a JSON content type does not make the body JSON here.
  const json = await api(`${server.url}/V1/runs/${runId}/Checkpoints/10`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"w":1}',
  });
  expect(json.status).toBe(201);
  const stored = await api(`${server.url}/v1/runs/${runId}/checkpoints/10`);
  expect(await stored.text()).toBe('{"w":1}');
  // Nor when the request names its target in absolute form (PUT http://host/v1/…), as proxies do.
  const absolute = await new Promise<number>((resolve, reject) => {
    const { hostname, port } = new URL(server.url);
    const req = request(
      {
        hostname,
        port,
        method: 'PUT',
        path: `${server.url}/v1/runs/${runId}/checkpoints/11`,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end('{"w":2}');
  });
  expect(absolute).toBe(201);
  const list = (await (await api(`${server.url}/v1/runs/${runId}/checkpoints`)).json()) as {
    iteration: number;
  }[];
  expect(list.map((c) => c.iteration)).toEqual([4, 7, 10, 11]);
});

describe('large checkpoints', () => {
  const MIB = 1024 * 1024;
  let large: ServerProcess & { databaseUrl: string };
  let largeRun: string;
  beforeAll(async () => {
    large = await startTestServer({
      CREDITLAB_MAX_CHECKPOINT_BYTES: String(10 * MIB),
      CREDITLAB_CHECKPOINT_MEMORY_BYTES: String(12 * MIB),
    });
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    largeRun = (await c.createRun({ name: 'large', env: 'e', method: 'grpo' })).id;
  });
  afterAll(() => large.stop());

  /** A PUT that declares `length` bytes and sends `first` of them, then waits to be told the rest. */
  const openUpload = (iteration: number, length: number, first: Buffer) => {
    const req = request(new URL(`${large.url}/v1/runs/${largeRun}/checkpoints/${iteration}`), {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${ADMIN_KEY}`,
        'content-type': 'application/octet-stream',
        'content-length': String(length),
      },
    });
    const answer = new Promise<{ status: number; retryAfter?: string; body: unknown }>(
      (resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              retryAfter: res.headers['retry-after'],
              body: JSON.parse(text || '{}'),
            }),
          );
        });
        req.on('error', reject);
      },
    );
    answer.catch(() => undefined);
    req.flushHeaders();
    if (first.length) req.write(first);
    return { req, answer };
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('a checkpoint of several read chunks downloads byte for byte', async () => {
    const bytes = randomBytes(9 * MIB + 123);
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    expect((await c.uploadCheckpoint(largeRun, 0, bytes, 'test/v1')).bytes).toBe(bytes.length);
    const res = await api(`${large.url}/v1/runs/${largeRun}/checkpoints/0`);
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  test('uploads in progress hold no more than CREDITLAB_CHECKPOINT_MEMORY_BYTES together: one more is told to retry', async () => {
    const held = randomBytes(9 * MIB);
    const holding = openUpload(1, held.length, held.subarray(0, 1024));
    // Until the server has reserved the held upload's bytes, a probe may be let in: then it is
    // dropped unanswered (its reservation goes with it) and sent again.
    let busy: Awaited<typeof holding.answer> | undefined;
    for (let attempt = 0; attempt < 30 && !busy; attempt++) {
      const probe = openUpload(2, 4 * MIB, Buffer.alloc(0));
      busy = await Promise.race([probe.answer, sleep(500).then(() => undefined)]);
      if (!busy) {
        probe.req.destroy();
        await sleep(200);
      }
    }
    expect(busy).toMatchObject({
      status: 503,
      retryAfter: '2',
      body: {
        error: 'SERVER_BUSY',
        message: expect.stringMatching(
          /^the server holds 9\.0 MiB of checkpoint uploads; 4\.0 MiB more would pass CREDITLAB_CHECKPOINT_MEMORY_BYTES \(12\.0 MiB\): retry shortly$/,
        ),
      },
    });
    // What still fits goes through meanwhile.
    const small = randomBytes(2 * MIB);
    const fits = openUpload(3, small.length, small);
    fits.req.end();
    expect((await fits.answer).status).toBe(201);
    holding.req.end(held.subarray(1024));
    expect((await holding.answer).status).toBe(201);
    // Once the held upload is stored, its memory is free again.
    const after = randomBytes(4 * MIB);
    const c = new CreditlabClient({ url: large.url, apiKey: ADMIN_KEY });
    expect((await c.uploadCheckpoint(largeRun, 2, after, 'test/v1')).bytes).toBe(after.length);
    const down = await c.downloadCheckpoint(largeRun, 1);
    expect(Buffer.from(down.data).equals(held)).toBe(true);
  });
});
