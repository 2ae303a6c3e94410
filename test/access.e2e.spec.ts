import { CreditlabClient, resolveConnection } from '@creditlab/client';
import { execFile } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import WebSocket from 'ws';
import { syntheticRun } from './support/synthetic-run';
import {
  ADMIN_KEY,
  api,
  gql,
  metric,
  spawnServer,
  startTestServer,
  type ServerProcess,
} from './support/test-server';
import { createTestDatabase } from './support/test-database';

let server: ServerProcess & { databaseUrl: string };
/** Keys by name: lab-a's writer and reader, lab-b's writer and admin. */
const keys: Record<'aWrite' | 'aRead' | 'bWrite' | 'bAdmin', string> = {
  aWrite: '',
  aRead: '',
  bWrite: '',
  bAdmin: '',
};
let runA: string;
let runB: string;
let jobA: string;
const NOWHERE = '11111111-1111-4111-8111-111111111111';

async function createKey(project: string, role: string, extra: Record<string, unknown> = {}) {
  const res = await gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
    server,
    'mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { id } } }',
    { i: { project, role, ...extra } },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data!.createApiKey;
}

beforeAll(async () => {
  server = await startTestServer();
  for (const name of ['lab-a', 'lab-b']) {
    const res = await gql(server, 'mutation($n: String!) { createProject(name: $n) { name } }', {
      n: name,
    });
    expect(res.errors).toBeUndefined();
  }
  keys.aWrite = (await createKey('lab-a', 'write')).key;
  keys.aRead = (await createKey('lab-a', 'read')).key;
  keys.bWrite = (await createKey('lab-b', 'write')).key;
  keys.bAdmin = (await createKey('lab-b', 'admin')).key;
  runA = (await syntheticRun(server.url, 2, undefined, 'run of lab-a', keys.aWrite)).id;
  runB = (await syntheticRun(server.url, 1, undefined, 'run of lab-b', keys.bWrite)).id;
  const job = await gql<{ recompute: { id: string } }>(
    server,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "grpo" }) { id } }',
    { r: runA },
    keys.aWrite,
  );
  jobA = job.data!.recompute.id;
});

afterAll(async () => {
  await server?.stop();
});

const post = (route: string, key: string | undefined, body: string, type = 'application/json') =>
  (key === undefined ? fetch : (u: string, i: RequestInit) => api(u, i, key))(
    `${server.url}${route}`,
    { method: 'POST', headers: { 'content-type': type }, body },
  );

/** A body with the run id replaced, so that answers about two runs can be compared word for word. */
const withoutId = (body: unknown, id: string) =>
  JSON.parse(JSON.stringify(body).split(id).join('<run>'));

describe('authentication', () => {
  test('no key or an unknown key: 401 on HTTP and GraphQL, with a message saying what to send', async () => {
    const none = await post('/v1/runs', undefined, '{}');
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({
      error: 'UNAUTHENTICATED',
      message: expect.stringContaining('Authorization: Bearer'),
    });
    // Where the first key is kept: told to a caller on this machine, not through a proxy.
    const local = (await (await post('/v1/runs', undefined, '{}')).json()) as { message: string };
    expect(local.message).toContain('credentials');
    const proxied = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
      body: '{}',
    });
    expect(proxied.status).toBe(401);
    expect(((await proxied.json()) as { message: string }).message).not.toContain('credentials');
    const graphql = await post(
      '/graphql',
      undefined,
      JSON.stringify({ query: '{ estimators { name } }' }),
    );
    expect(graphql.status).toBe(401);
    expect(
      ((await graphql.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!
        .extensions.code,
    ).toBe('UNAUTHENTICATED');
    const wrong = await post('/v1/runs', `cl_00000000_${'x'.repeat(43)}`, '{}');
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({
      message: expect.stringContaining('not recognised'),
    });
  });

  test('a caller without a key is answered before its body is read: it cannot hold a connection by trickling one', async () => {
    for (const target of ['/graphql', '/v1/runs']) {
      const { hostname, port } = new URL(server.url);
      const req = httpRequest({
        hostname,
        port,
        path: target,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '28' },
      });
      req.on('error', () => undefined); // the server may close the connection with the body unsent
      req.write('{"qu'); // 4 of 28 bytes, and no more until the answer
      const answered = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
      const waited = new Promise<'no answer'>((resolve) =>
        setTimeout(() => resolve('no answer'), 20_000),
      );
      const res = await Promise.race([answered, waited]);
      req.destroy();
      expect([target, res === 'no answer' ? res : res.statusCode]).toEqual([target, 401]);
    }
  });

  test('the web app’s pages and assets load without a key; API paths, GraphQL queries and writes still need one', async () => {
    const page = (path: string, accept = 'text/html') =>
      fetch(`${server.url}${path}`, { headers: { accept } });
    for (const path of ['/', '/runs/some-id', '/estimators']) {
      const res = await page(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await res.text()).toContain('<div id="root">');
    }
    // The explorer: GET /graphql from a browser is the app's page, whose router opens GraphiQL.
    const explorer = await page('/graphql');
    expect(explorer.status).toBe(200);
    expect(await explorer.text()).toContain('<div id="root">');
    const html = await (await page('/')).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await page(script, '*/*');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await page('/assets/missing.js', '*/*')).status).toBe(404);
    // Nothing outside the built app is reachable through it.
    expect(await (await page('/..%2f..%2fpackage.json', '*/*')).text()).not.toContain(
      '"dependencies"',
    );
    const query = encodeURIComponent('{ viewer { role } }');
    for (const [method, path] of [
      ['GET', `/graphql?query=${query}`],
      ['GET', '/v1/runs/x/checkpoints'],
      ['GET', '/v1/no-such-route'],
      ['POST', '/'],
    ] as const)
      expect(
        (await fetch(`${server.url}${path}`, { method, headers: { accept: 'application/json' } }))
          .status,
      ).toBe(401);
    expect((await page('/graphql', 'application/json')).status).toBe(401);
  });

  test('probes and the Prometheus scrape need no key', async () => {
    for (const route of ['/healthz', '/readyz', '/metrics'])
      expect((await fetch(`${server.url}${route}`)).status).toBe(200);
  });

  test('viewer says which key is calling; the server listens on 127.0.0.1 by default', async () => {
    const res = await gql<{ viewer: { project: string; role: string } }>(
      server,
      '{ viewer { project role prefix } }',
      {},
      keys.aRead,
    );
    expect(res.data!.viewer).toMatchObject({
      project: 'lab-a',
      role: 'read',
      prefix: keys.aRead.split('_')[1],
    });
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
  });
});

describe('roles', () => {
  test('a read key queries but cannot ingest, ask for online advantages, recompute or cancel', async () => {
    const ok = await gql(server, '{ runs { nodes { id } } }', {}, keys.aRead);
    expect(ok.errors).toBeUndefined();
    expect(
      (await post('/v1/runs', keys.aRead, JSON.stringify({ name: 'x', env: 'e', method: 'grpo' })))
        .status,
    ).toBe(403);
    const events = await post(`/v1/runs/${runA}/events`, keys.aRead, '', 'application/x-ndjson');
    expect(events.status).toBe(403);
    expect(await events.json()).toMatchObject({
      error: 'FORBIDDEN',
      message: expect.stringContaining('needs a write key'),
    });
    expect(
      (await post(`/v1/runs/${runA}/iterations/0/advantages`, keys.aRead, '{"method":"grpo"}'))
        .status,
    ).toBe(403);
    for (const mutation of [
      `mutation { createRun(input: { name: "x", env: "e", method: "grpo" }) { id } }`,
      `mutation { appendEvents(runId: "${runA}", events: []) { accepted } }`,
      `mutation { finishRun(runId: "${runA}", status: FAILED) { id } }`,
      `mutation { recompute(runId: "${runA}", method: { name: "rloo" }) { id } }`,
      `mutation { cancelJob(id: "${jobA}") { id } }`,
    ]) {
      const res = await gql(server, mutation, {}, keys.aRead);
      expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }
  });

  test('a write key cannot manage keys or projects; a project admin cannot create projects', async () => {
    for (const op of [
      '{ apiKeys { id } }',
      'mutation { createApiKey(input: { role: admin }) { key } }',
      `mutation { revokeApiKey(id: "${NOWHERE}") { id } }`,
      'mutation { createProject(name: "lab-c") { name } }',
    ]) {
      expect((await gql(server, op, {}, keys.aWrite)).errors?.[0]?.extensions?.code).toBe(
        'FORBIDDEN',
      );
    }
    const res = await gql(
      server,
      'mutation { createProject(name: "lab-c") { name } }',
      {},
      keys.bAdmin,
    );
    expect(res.errors?.[0]).toMatchObject({
      extensions: { code: 'FORBIDDEN' },
      message: expect.stringContaining('not confined to a project'),
    });
  });
});

describe("another project's key finds nothing, on every path", () => {
  test('HTTP ingest and online advantages: the same 404 as a run that does not exist', async () => {
    for (const route of ['/events', '/iterations/0/advantages']) {
      const type = route === '/events' ? 'application/x-ndjson' : 'application/json';
      const body = route === '/events' ? '' : '{"method":"grpo"}';
      const theirs = await post(`/v1/runs/${runA}${route}`, keys.bWrite, body, type);
      const nobody = await post(`/v1/runs/${NOWHERE}${route}`, keys.bWrite, body, type);
      expect(theirs.status).toBe(404);
      expect(withoutId(await theirs.json(), runA)).toEqual(withoutId(await nobody.json(), NOWHERE));
    }
  });

  test('checkpoints: upload, list, download and download URL answer as for a run that does not exist', async () => {
    const upload = (run: string) =>
      api(
        `${server.url}/v1/runs/${run}/checkpoints/1`,
        { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: 'abc' },
        keys.bWrite,
      );
    for (const [theirs, nobody] of [
      [await upload(runA), await upload(NOWHERE)],
      [
        await api(`${server.url}/v1/runs/${runA}/checkpoints`, {}, keys.bWrite),
        await api(`${server.url}/v1/runs/${NOWHERE}/checkpoints`, {}, keys.bWrite),
      ],
      [
        await api(`${server.url}/v1/runs/${runA}/checkpoints/1`, {}, keys.bWrite),
        await api(`${server.url}/v1/runs/${NOWHERE}/checkpoints/1`, {}, keys.bWrite),
      ],
      [
        await api(`${server.url}/v1/runs/${runA}/checkpoints/1/url`, {}, keys.bWrite),
        await api(`${server.url}/v1/runs/${NOWHERE}/checkpoints/1/url`, {}, keys.bWrite),
      ],
    ] as const) {
      expect(theirs.status).toBe(404);
      expect(withoutId(await theirs.json(), runA)).toEqual(withoutId(await nobody.json(), NOWHERE));
    }
    // the owner's read key may download but not upload
    const readUpload = await api(
      `${server.url}/v1/runs/${runA}/checkpoints/1`,
      { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: 'abc' },
      keys.aRead,
    );
    expect(readUpload.status).toBe(403);
    // ... and ask where to download from: let in, told the run has no such checkpoint
    const readUrl = await api(`${server.url}/v1/runs/${runA}/checkpoints/1/url`, {}, keys.aRead);
    expect(readUrl.status).toBe(404);
    expect(((await readUrl.json()) as { message: string }).message).toContain(
      `run ${runA} has no checkpoint 1`,
    );
  });

  test('a run cannot be created in, or forked from, another project', async () => {
    const elsewhere = await post(
      '/v1/runs',
      keys.bWrite,
      JSON.stringify({ name: 'x', env: 'e', method: 'grpo', project: 'lab-a' }),
    );
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({
      error: 'NOT_FOUND',
      message: 'project "lab-a" not found',
    });
    const fork = async (parent: string) =>
      post(
        '/v1/runs',
        keys.bWrite,
        JSON.stringify({ name: 'f', env: 'e', method: 'grpo', parentRunId: parent }),
      );
    const theirs = await fork(runA);
    const nobody = await fork(NOWHERE);
    expect(theirs.status).toBe(400);
    expect(withoutId(await theirs.json(), runA)).toEqual(withoutId(await nobody.json(), NOWHERE));
    // its own project's runs are fine, and the run lands in the key's project
    const own = await post(
      '/v1/runs',
      keys.bWrite,
      JSON.stringify({ name: 'f', env: 'e', method: 'grpo', parentRunId: runB }),
    );
    expect(own.status).toBe(201);
    const { id } = (await own.json()) as { id: string };
    const row = await gql<{ run: { project: string } }>(
      server,
      `{ run(id: "${id}") { project } }`,
      {},
      keys.bWrite,
    );
    expect(row.data!.run.project).toBe('lab-b');
  });

  test('GraphQL run, runs, filters and cursors show only the own project', async () => {
    const one = await gql<{ run: unknown }>(
      server,
      `{ run(id: "${runA}") { id events { nodes { seq } } } }`,
      {},
      keys.bWrite,
    );
    expect(one).toEqual({ data: { run: null } });
    const listed = async (filter: string, key: string, after?: string) =>
      (
        await gql<{
          runs: { nodes: { id: string; project: string }[]; pageInfo: { endCursor: string } };
        }>(
          server,
          `query($a: String) { runs(first: 1, after: $a${filter}) { nodes { id project } pageInfo { endCursor } } }`,
          { a: after ?? null },
          key,
        )
      ).data!.runs;
    expect((await listed('', keys.bWrite)).nodes.every((r) => r.project === 'lab-b')).toBe(true);
    expect((await listed(', filter: { project: "lab-a" }', keys.bWrite)).nodes).toEqual([]);
    // a cursor taken from the admin's listing, which passes over lab-a's runs, still shows only lab-b
    const adminPage = await listed('', ADMIN_KEY);
    const afterCursor = await listed('', keys.bWrite, adminPage.pageInfo.endCursor);
    expect(afterCursor.nodes.every((r) => r.project === 'lab-b')).toBe(true);
    // the owner sees it all, nested fields included
    const mine = await gql<{ run: { events: { nodes: unknown[] } } }>(
      server,
      `{ run(id: "${runA}") { events { nodes { seq } } } }`,
      {},
      keys.aRead,
    );
    expect(mine.data!.run.events.nodes.length).toBeGreaterThan(1);
  });

  test('appendEvents, finishRun, recompute and compare: the same NOT_FOUND as a run that does not exist', async () => {
    for (const op of [
      (r: string) => `mutation { appendEvents(runId: "${r}", events: []) { accepted } }`,
      (r: string) => `mutation { finishRun(runId: "${r}", status: ABORTED) { id status } }`,
      (r: string) => `mutation { recompute(runId: "${r}", method: { name: "rloo" }) { id } }`,
      (r: string) =>
        `{ compare(runId: "${r}", methods: [{ name: "grpo" }, { name: "rloo" }]) { stepCount } }`,
    ]) {
      const theirs = await gql(server, op(runA), {}, keys.bWrite);
      const nobody = await gql(server, op(NOWHERE), {}, keys.bWrite);
      expect(theirs.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      expect(withoutId(theirs, runA)).toEqual(withoutId(nobody, NOWHERE));
    }
    const untouched = await gql<{ run: { status: string } }>(
      server,
      `{ run(id: "${runA}") { status } }`,
      {},
      keys.aRead,
    );
    expect(untouched.data!.run.status).toBe('RUNNING');
  });

  test('jobs: another project’s job is null to read and to cancel, and stays untouched', async () => {
    expect(await gql(server, `{ job(id: "${jobA}") { id status } }`, {}, keys.bWrite)).toEqual({
      data: { job: null },
    });
    expect(
      await gql(server, `mutation { cancelJob(id: "${jobA}") { id } }`, {}, keys.bWrite),
    ).toEqual({
      data: { cancelJob: null },
    });
    const owner = await gql<{ job: { status: string } }>(
      server,
      `{ job(id: "${jobA}") { status } }`,
      {},
      keys.aRead,
    );
    expect(owner.data!.job.status).not.toBe('CANCELLED');
  });

  test('projects and keys: a project admin sees and manages only its own', async () => {
    const projects = await gql<{ projects: { name: string }[] }>(
      server,
      '{ projects { name } }',
      {},
      keys.bAdmin,
    );
    expect(projects.data!.projects.map((p) => p.name)).toEqual(['lab-b']);
    const listed = await gql<{ apiKeys: { project: string }[] }>(
      server,
      '{ apiKeys { project } }',
      {},
      keys.bAdmin,
    );
    expect(listed.data!.apiKeys.length).toBe(2);
    expect(listed.data!.apiKeys.every((k) => k.project === 'lab-b')).toBe(true);
    expect(
      (
        await gql<{ apiKeys: unknown[] }>(
          server,
          '{ apiKeys(project: "lab-a") { id } }',
          {},
          keys.bAdmin,
        )
      ).data!.apiKeys,
    ).toEqual([]);
    const foreign = await gql(
      server,
      'mutation { createApiKey(input: { project: "lab-a", role: write }) { key } }',
      {},
      keys.bAdmin,
    );
    expect(foreign.errors?.[0]).toMatchObject({
      extensions: { code: 'NOT_FOUND' },
      message: 'project "lab-a" not found',
    });
    const global = await gql(
      server,
      'mutation { createApiKey(input: { role: admin }) { apiKey { project } } }',
      {},
      keys.bAdmin,
    );
    expect(global.data).toEqual({ createApiKey: { apiKey: { project: 'lab-b' } } }); // never a key over every project
    const aKeyId = keys.aRead.split('_')[1]!;
    expect(
      await gql(server, `mutation { revokeApiKey(id: "${aKeyId}") { id } }`, {}, keys.bAdmin),
    ).toEqual({
      data: { revokeApiKey: null },
    });
    expect((await gql(server, '{ viewer { role } }', {}, keys.aRead)).errors).toBeUndefined();
  });

  test('the only subscription is runProgress, which checks the run like every other path (test/live-updates.e2e.spec.ts)', async () => {
    const res = await gql<{ __schema: { subscriptionType: { fields: { name: string }[] } } }>(
      server,
      '{ __schema { subscriptionType { fields { name } } } }',
    );
    expect(res.data!.__schema.subscriptionType.fields.map((f) => f.name)).toEqual(['runProgress']);
  });
});

test('a revoked key is refused at once', async () => {
  const { key, apiKey } = await createKey('lab-a', 'read');
  expect((await gql(server, '{ viewer { role } }', {}, key)).errors).toBeUndefined();
  const revoked = await gql<{ revokeApiKey: { revokedAt: string } }>(
    server,
    'mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }',
    { id: apiKey.id },
  );
  expect(revoked.data!.revokeApiKey.revokedAt).toBeTruthy();
  const after = await api(
    `${server.url}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":"{ viewer { role } }"}',
    },
    key,
  );
  expect(after.status).toBe(401);
});

/** How a graphql-ws connection with this key ends: 'ack', or the code and reason the server closed it with. */
const socketWith = (url: string, key: string) =>
  new Promise<'ack' | { code: number; reason: string }>((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    ws.on('open', () =>
      ws.send(
        JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key}` } }),
      ),
    );
    ws.on('message', (m) => {
      if ((JSON.parse(String(m)) as { type: string }).type !== 'connection_ack') return;
      ws.close();
      resolve('ack');
    });
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
    ws.on('error', reject);
  });
/** WebSocket's "Try Again Later", which graphql-ws clients retry (4403 they give up on). */
const TRY_AGAIN_LATER = 1013;

test('per-key rate limit: 429 with Retry-After once over, other keys unaffected, and the client waits it out', async () => {
  const { key } = await createKey('lab-a', 'read', { rateLimitPerMinute: 3 });
  const statuses: number[] = [];
  let limited: Response | undefined;
  for (let i = 0; i < 4; i++) {
    const res = await api(
      `${server.url}/graphql`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ viewer { role } }"}',
      },
      key,
    );
    statuses.push(res.status);
    if (res.status === 429) limited = res;
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
  expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
  // A subscription socket over the limit is told to come back, not that its key is wrong.
  expect(await socketWith(server.url, key)).toEqual({
    code: TRY_AGAIN_LATER,
    reason: expect.stringMatching(/is over its limit of 3 requests per minute; retry in \d+ s$/),
  });
  expect(await limited!.json()).toMatchObject({
    error: 'RATE_LIMITED',
    message: expect.stringContaining('3 requests per minute'),
    errors: [{ extensions: { code: 'RATE_LIMITED' } }],
  });
  expect((await gql(server, '{ viewer { role } }', {}, keys.aRead)).errors).toBeUndefined();
});

describe('unknown keys', () => {
  const viewer = (url: string, key: string) =>
    api(
      `${url}/graphql`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ viewer { role } }"}',
      },
      key,
    );
  const madeUp = (i: number) => `cl_00000000_${String(i).padStart(43, 'x')}`;

  /** GET /v1/runs with `key` from a loopback address of our choosing: its status. */
  const statusFrom = (url: string, localAddress: string, key: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${url}/v1/runs`,
        { localAddress, headers: { authorization: `Bearer ${key}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });

  test('an address that presents too many is refused unread for the minute, on HTTP and socket alike; keys that worked keep working', async () => {
    const guarded = await startTestServer({
      CREDITLAB_UNKNOWN_KEYS_PER_MINUTE: '3',
      CREDITLAB_KEY_CACHE_SECONDS: '1',
    });
    try {
      expect((await viewer(guarded.url, ADMIN_KEY)).status).toBe(200);
      // Made-up keys on the socket count as on HTTP: three lookups find nothing, the fourth is refused.
      expect(await socketWith(guarded.url, madeUp(1))).toMatchObject({ code: 4403 });
      expect(await socketWith(guarded.url, madeUp(2))).toMatchObject({ code: 4403 });
      expect((await viewer(guarded.url, madeUp(3))).status).toBe(401);
      const refused = await viewer(guarded.url, madeUp(4));
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({
        error: 'RATE_LIMITED',
        message: expect.stringMatching(
          /^more than 3 unrecognised API keys from this address in a minute: its keys are not looked up for \d+ s$/,
        ),
      });
      // On the socket too the refusal is for now: a code its clients retry, saying for how long.
      expect(await socketWith(guarded.url, madeUp(5))).toEqual({
        code: TRY_AGAIN_LATER,
        reason: expect.stringMatching(/its keys are not looked up for \d+ s$/),
      });
      // A key already found unknown is answered from memory: still 401, and no lookup.
      expect((await viewer(guarded.url, madeUp(3))).status).toBe(401);
      // A key that worked is looked up still, after the key cache has forgotten it too.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect((await viewer(guarded.url, ADMIN_KEY)).status).toBe(200);
      expect(await socketWith(guarded.url, ADMIN_KEY)).toBe('ack');
      // A key that never worked waits for the minute like any other from this address.
      const created = await gql<{ createApiKey: { key: string } }>(
        guarded,
        'mutation { createApiKey(input: { role: admin }) { key } }',
      );
      expect((await viewer(guarded.url, created.data!.createApiKey.key)).status).toBe(429);
      // Another address has its own budget, and requests sent together cannot overshoot it.
      const burst = await Promise.all(
        Array.from({ length: 40 }, (_, i) => statusFrom(guarded.url, '127.0.0.2', madeUp(100 + i))),
      );
      expect(burst.filter((s) => s === 401)).toHaveLength(3);
      expect(burst.filter((s) => s === 429)).toHaveLength(37);
      // A client that closes its connection right after the request is counted too, not skipped:
      // 30 such requests cost at most three lookups (one budget for every closed connection).
      const statements = await metric(guarded, 'creditlab_db_statements_total');
      await Promise.all(
        Array.from(
          { length: 30 },
          (_, i) =>
            new Promise<void>((resolve) => {
              const socket = connect(Number(new URL(guarded.url).port), '127.0.0.1', () => {
                socket.write(
                  `GET /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${madeUp(200 + i)}\r\n\r\n`,
                );
                socket.resetAndDestroy();
                resolve();
              });
              socket.on('error', () => resolve());
            }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the server takes them up
      expect(
        (await metric(guarded, 'creditlab_db_statements_total')) - statements,
      ).toBeLessThanOrEqual(3);
    } finally {
      await guarded.stop();
    }
  });

  test('CREDITLAB_KEY_CACHE_SECONDS=0 still remembers keys no one holds: one wrong key retried is 401 every time, and locks nobody out', async () => {
    const uncached = await startTestServer({ CREDITLAB_KEY_CACHE_SECONDS: '0' });
    try {
      for (let i = 0; i < 70; i++) expect((await viewer(uncached.url, madeUp(7))).status).toBe(401);
      expect((await viewer(uncached.url, ADMIN_KEY)).status).toBe(200);
    } finally {
      await uncached.stop();
    }
  });

  test('CREDITLAB_KEY_CACHE_SECONDS=0 looks a key up every time: a revocation by another process counts at once', async () => {
    const uncached = await startTestServer({ CREDITLAB_KEY_CACHE_SECONDS: '0' });
    const db = new pg.Client({ connectionString: uncached.databaseUrl });
    try {
      const created = await gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
        uncached,
        'mutation { createApiKey(input: { role: admin }) { key apiKey { id } } }',
      );
      const { key, apiKey } = created.data!.createApiKey;
      expect((await viewer(uncached.url, key)).status).toBe(200);
      await db.connect();
      await db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [apiKey.id]);
      expect((await viewer(uncached.url, key)).status).toBe(401);
    } finally {
      await db.end();
      await uncached.stop();
    }
  });
});

describe('first start of a server with no keys', () => {
  test('creates an admin key, writes it to a 0600 credentials file the client reads, and keeps it across restarts', async () => {
    const databaseUrl = await createTestDatabase();
    const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-creds-'));
    const file = path.join(dir, 'nested', 'credentials.json');
    const env = {
      DATABASE_URL: databaseUrl,
      CREDITLAB_ADMIN_KEY: undefined,
      CREDITLAB_CREDENTIALS: file,
    };
    const first = await spawnServer(env);
    let written: string;
    try {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      written = await readFile(file, 'utf8');
      const saved = JSON.parse(written) as {
        url: string;
        apiKey: string;
        role: string;
        project: null;
      };
      expect(saved).toMatchObject({ url: first.url, role: 'admin', project: null });
      expect(first.output()).not.toContain(saved.apiKey);
      // what the trainer and the CLIs do when given no key
      const connection = resolveConnection({}, { CREDITLAB_CREDENTIALS: file });
      expect(connection).toEqual({ url: first.url, apiKey: saved.apiKey });
      const client = new CreditlabClient(connection);
      const { id } = await client.createRun({ name: 'first', env: 'e', method: 'grpo' });
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      // a key is only sent to the server it was written for
      expect(
        resolveConnection({ url: 'http://10.0.0.9:4000' }, { CREDITLAB_CREDENTIALS: file }).apiKey,
      ).toBeUndefined();
    } finally {
      await first.stop();
    }
    const second = await spawnServer(env);
    try {
      expect(await readFile(file, 'utf8')).toBe(written); // not replaced: the database already has a key
      const saved = JSON.parse(written) as { apiKey: string };
      expect((await gql(second, '{ viewer { role } }', {}, saved.apiKey)).errors).toBeUndefined();
    } finally {
      await second.stop();
    }
  });
});

describe('npm run admin', () => {
  const admin = (args: string[], key = ADMIN_KEY) =>
    promisify(execFile)(
      process.execPath,
      [
        'scripts/run-entry.mjs',
        'apps/admin/src/admin-main.ts',
        ...args,
        '--server',
        server.url,
        '--key',
        key,
      ],
      {
        cwd: path.resolve(__dirname, '..'),
      },
    ).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: e.stdout,
        stderr: e.stderr,
      }),
    );

  test('create-key prints a working key once; keys lists it by prefix only', async () => {
    const created = await admin([
      'create-key',
      '--project',
      'lab-a',
      '--role',
      'write',
      '--name',
      'cli',
    ]);
    expect(created.code).toBe(0);
    const key = created.stdout.split('\n')[0]!;
    expect(key).toMatch(/^cl_[0-9a-f]{8}_[\w-]{43}$/);
    expect(created.stdout).toContain('only time the key is shown');
    const viewer = await gql<{ viewer: { project: string; role: string } }>(
      server,
      '{ viewer { project role } }',
      {},
      key,
    );
    expect(viewer.data!.viewer).toEqual({ project: 'lab-a', role: 'write' });
    const listed = await admin(['keys', '--project', 'lab-a']);
    expect(listed.stdout).toContain(`cl_${key.split('_')[1]}_…`);
    expect(listed.stdout).not.toContain(key);
    const who = JSON.parse((await admin(['whoami', '--json'], key)).stdout) as { role: string };
    expect(who.role).toBe('write');
  });

  test('mistakes exit with status 2 and say what is wrong', async () => {
    const badRole = await admin(['create-key', '--project', 'lab-a', '--role', 'owner']);
    expect(badRole).toMatchObject({ code: 2, stderr: expect.stringContaining('--role') });
    const noProject = await admin(['create-key', '--project', 'nope', '--role', 'read']);
    expect(noProject).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('project "nope" not found'),
    });
    const notAdmin = await admin(['keys'], keys.aRead);
    expect(notAdmin).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('needs an admin key'),
    });
  });
});
