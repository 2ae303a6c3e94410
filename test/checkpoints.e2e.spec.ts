import { createHash } from 'node:crypto';
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
