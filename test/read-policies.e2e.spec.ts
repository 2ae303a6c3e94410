import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { columnarBatchFromJson, estimate } from '@creditlab/estimators';
import pg from 'pg';
import { fixtureBatches } from './support/fixture-batches';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * Reading advantages never changes a run's history, and a read key cannot make the server store
 * without bound: it may read anything, but only sets at default parameters are kept for it.
 */
let server: ServerProcess & { databaseUrl: string };
let runId: string;
let readKey: string;
const [, batch] = fixtureBatches()[4]!;

beforeAll(async () => {
  server = await startTestServer();
  await gql(server, 'mutation { createProject(name: "readers") { name } }');
  const key = await gql<{ createApiKey: { key: string } }>(
    server,
    'mutation { createApiKey(input: { project: "readers", role: read }) { key } }',
  );
  readKey = key.data!.createApiKey.key;
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (
    await client.createRun({ name: 'read me', project: 'readers', env: 'e', method: 'grpo' })
  ).id;
  await client.appendEvents(runId, rolloutEvents(0, batch));
});
afterAll(() => server.stop());

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  try {
    return (await c.query<{ n: number }>(sql, params)).rows[0]!.n;
  } finally {
    await c.end();
  }
}
const sets = () =>
  count('SELECT count(*)::int AS n FROM advantage_sets WHERE run_id = $1', [runId]);
const events = () => count('SELECT count(*)::int AS n FROM events WHERE run_id = $1', [runId]);
const library = (method: string, params: Record<string, unknown> = {}) =>
  Float32Array.from(estimate(columnarBatchFromJson(batch), method, params).advantages);

const read = (query: string, key = readKey, accept = 'application/octet-stream') =>
  api(
    `${server.url}/v1/runs/${runId}/iterations/0/advantages?${query}`,
    { headers: { accept } },
    key,
  );

test('GET reads an iteration with a read key, as float32 or JSON, and records nothing', async () => {
  const before = await events();
  const raw = await read('method=gigpo&params=' + encodeURIComponent('{"gamma":0.9}'));
  expect(raw.status).toBe(200);
  expect(new Float32Array(await raw.arrayBuffer())).toEqual(library('gigpo', { gamma: 0.9 }));
  const doc = (await (
    await read('method=gigpo&diagnostics=true', readKey, 'application/json')
  ).json()) as {
    format: string;
    groups: { trajectories: { advantages: number[]; diagnostics: Record<string, unknown> }[] }[];
  };
  expect(doc.format).toBe('advantages/v1');
  expect(doc.groups.flatMap((g) => g.trajectories.flatMap((t) => t.advantages))).toEqual(
    Array.from(library('gigpo')),
  );
  expect(Object.keys(doc.groups[0]!.trajectories[0]!.diagnostics)).toContain('stepGroupSize');
  expect(await events()).toBe(before);
  const bad = await read('method=gigpo&params=notjson');
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ error: 'INVALID_INPUT', path: 'params' });
});

test('POST is the trainer’s consumption: a write key, one advantages.used per event id', async () => {
  const post = (key: string, eventId: string) =>
    api(
      `${server.url}/v1/runs/${runId}/iterations/0/advantages`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/octet-stream' },
        body: JSON.stringify({ method: 'grpo', eventId }),
      },
      key,
    );
  expect((await post(readKey, newEventId())).status).toBe(403);
  const before = await events();
  const eventId = newEventId();
  expect((await post(ADMIN_KEY, eventId)).status).toBe(200);
  expect((await post(ADMIN_KEY, eventId)).status).toBe(200); // a retry
  expect(await events()).toBe(before + 1);
});

test('a read key stores a set at default parameters only; other parameters are computed, not kept', async () => {
  const before = await sets();
  const other = await read('method=gaca&params=' + encodeURIComponent('{"alphaC":0.5}'));
  expect(new Float32Array(await other.arrayBuffer())).toEqual(library('gaca', { alphaC: 0.5 }));
  expect(other.headers.get('x-creditlab-advantage-set')).toBeNull();
  const q = await gql<{
    run: { groups: { nodes: { trajectories: { steps: { a: number }[] }[] }[] } };
  }>(
    server,
    'query($id: ID!) { run(id: $id) { groups(iteration: 0) { nodes { trajectories { steps { a: advantage(method: { name: "gagpo", params: { lambda: 0.5 } }) } } } } } }',
    { id: runId },
    readKey,
  );
  expect(
    q.data!.run.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps.map((s) => s.a))),
  ).toEqual(Array.from(library('gagpo', { lambda: 0.5 })));
  expect(await sets()).toBe(before);
  const defaults = await read('method=rloo');
  expect(defaults.headers.get('x-creditlab-advantage-set')).toMatch(/^\d+$/);
  expect(await sets()).toBe(before + 1);
});

test('one request cannot fan out into many estimator runs: aliases of many parameter sets are refused', async () => {
  const before = await sets();
  const aliases = Array.from(
    { length: 60 },
    (_, i) => `a${i}: advantage(method: { name: "gigpo", params: { gamma: 0.${String(i + 10)} } })`,
  ).join(' ');
  const res = await gql(
    server,
    `query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 1) { nodes { trajectories { steps { ${aliases} } } } } } }`,
    { id: runId },
    readKey,
  );
  expect(res.errors?.[0]?.message).toMatch(/at most 12 distinct methods|query cost \d+ exceeds/);
  expect(await sets()).toBe(before);
  const compare = await gql(
    server,
    `query($r: ID!) { compare(runId: $r, methods: [${Array.from({ length: 12 }, (_, i) => `{ name: "gigpo", params: { gamma: 0.${i + 10} } }`).join(', ')}]) { stepCount } }`,
    { r: runId },
    readKey,
  );
  expect(compare.errors).toBeUndefined();
  expect(await sets()).toBe(before); // computed for the request, not kept
});
