import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { CreditlabClient, newEventId } from '@creditlab/client';
import { rowCounts } from './support/row-counts';
import {
  gql,
  metric,
  startTestServer,
  type ServerProcess,
  ADMIN_KEY,
  api,
} from './support/test-server';

/**
 * Malformed requests from test/fixtures/not-ok: each gets its status and a
 * JSON body naming the line, the field path and what is wrong, and the
 * database is left exactly as it was (all or nothing per request).
 */
interface NotOk {
  description: string;
  run?: 'existing' | 'unknown';
  contentType?: string;
  lines: unknown[];
  oversizeLineBytes?: number;
  padToBytes?: number;
  expect: { status: number; error: string; message: string; line?: number; path?: string };
}

const dir = path.join(__dirname, 'fixtures/not-ok');
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map(
    (f) =>
      [
        f.replace('.json', ''),
        JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as NotOk,
      ] as const,
  );

const LIMITS = { CREDITLAB_MAX_LINE_BYTES: '65536', CREDITLAB_MAX_REQUEST_BYTES: '262144' };
let server: ServerProcess & { databaseUrl: string };
let runId: string;
/** The same server but for where bodies are parsed and checked: every one on the preparing thread. */
let threaded: ServerProcess & { databaseUrl: string };
let threadedRunId: string;

const createRun = async (s: ServerProcess) =>
  (
    await new CreditlabClient({ url: s.url, apiKey: ADMIN_KEY }).createRun({
      name: 'bad input',
      env: 'e',
      method: 'grpo',
    })
  ).id;

beforeAll(async () => {
  // The request's own thread for every body here (small bodies are checked there by default).
  server = await startTestServer({ ...LIMITS, CREDITLAB_INGEST_THREAD_MIN_BYTES: 'off' });
  // Started with a V8 flag, as operators start Node: a Worker refuses such flags given to it
  // explicitly (every threaded request failed with 500).
  threaded = await startTestServer({ ...LIMITS, CREDITLAB_INGEST_THREAD_MIN_BYTES: '0' }, [
    '--max-old-space-size=4096',
  ]);
  [runId, threadedRunId] = await Promise.all([createRun(server), createRun(threaded)]);
});
afterAll(() => Promise.all([server?.stop(), threaded?.stop()]));

function body(c: NotOk): string {
  let text =
    c.lines
      .map((l) =>
        typeof l === 'object' && l !== null && '$raw' in l
          ? String((l as { $raw: string }).$raw)
          : JSON.stringify(l),
      )
      .join('\n') + '\n';
  if (c.oversizeLineBytes) text += `{"pad": "${'x'.repeat(c.oversizeLineBytes)}"}\n`;
  while (c.padToBytes && text.length < c.padToBytes) text += '\n'.repeat(1000);
  return text;
}

test('the not-ok folder covers the cases the issue names', () => {
  const names = cases.map(([n]) => n);
  for (const n of [
    'bad-json-line',
    'unknown-type',
    'missing-field',
    'non-finite-number',
    'wrong-embedding-length',
    'oversize-line',
    'unknown-run',
    // What PostgreSQL cannot store: refused at the edge with the field's path, never a 500.
    'nul-in-state',
    'nul-in-extra-key',
    'nul-in-extra-value',
    'nul-in-metric-name',
    'metric-name-too-long',
    'nul-in-summary',
    'lone-surrogate-in-group-id',
    'lone-surrogate-in-state',
    'iteration-beyond-int32',
    'deep-nesting',
    'compact-embedding-not-float32',
    'compact-embedding-nan',
    'embedding-beyond-float32',
    // A field no schema defines would be dropped without a word: refused instead.
    'unknown-field',
    'unknown-envelope-field',
  ]) {
    expect(names).toContain(n);
  }
});

async function refused(s: ServerProcess & { databaseUrl: string }, run: string, c: NotOk) {
  const before = await rowCounts(s.databaseUrl);
  const target = c.run === 'unknown' ? '11111111-1111-4111-8111-111111111111' : run;
  const res = await api(`${s.url}/v1/runs/${target}/events`, {
    method: 'POST',
    headers: { 'content-type': c.contentType ?? 'application/x-ndjson' },
    body: body(c),
  });
  const json = (await res.json()) as Record<string, unknown>;
  expect(res.status).toBe(c.expect.status);
  expect(json.error).toBe(c.expect.error);
  expect(json.message).toContain(c.expect.message);
  if (c.expect.line !== undefined) expect(json.line).toBe(c.expect.line);
  if (c.expect.path !== undefined) expect(json.path).toBe(c.expect.path);
  expect(await rowCounts(s.databaseUrl)).toEqual(before);
  return json;
}

test('the server started with a V8 flag checks bodies on its preparing thread', async () => {
  // A refused body's lines reach the thread like any other (a line past the first of this one).
  const events = ['a', 'b'].map((name) =>
    JSON.stringify({
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: 0, metrics: { [name]: 1 } },
    }),
  );
  const res = await api(`${threaded.url}/v1/runs/${threadedRunId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: `${events.join('\n')}\n`,
  });
  expect(res.status).toBe(200);
  expect(await metric(threaded, 'creditlab_ingest_thread_lines_total')).toBeGreaterThan(0);
  expect(threaded.output()).not.toContain('preparing thread cannot start');
});

test.each(cases)('%s', async (_name, c) => {
  const here = await refused(server, runId, c);
  // The same refusal, word for word, when the body is parsed and checked on the preparing thread.
  const there = await refused(threaded, threadedRunId, c);
  expect(String(there.message).replaceAll(threadedRunId, runId)).toBe(here.message);
});

test('a JSON body over its limit is refused with 413 naming the limit', async () => {
  const res = await api(`${server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'x', env: 'e', method: 'grpo', config: { pad: 'x'.repeat(3e6) } }),
  });
  expect(res.status).toBe(413);
  expect(await res.json()).toMatchObject({
    error: 'PAYLOAD_TOO_LARGE',
    message: expect.stringMatching(/^JSON body larger than 2097152 bytes/),
  });
});

test('a JSON body that cannot be read is refused saying why, and stores nothing', async () => {
  const before = await rowCounts(server.databaseUrl);
  const run = JSON.stringify({ name: 'x', env: 'e', method: 'grpo' });
  const notUtf8 = Buffer.concat([
    Buffer.from('{"name":"x'),
    Buffer.from([0xff]),
    Buffer.from('","env":"e","method":"grpo"}'),
  ]);
  const cases: [string, Record<string, string>, string | Buffer, number, string, RegExp][] = [
    [
      '/v1/runs',
      {},
      '{"name": "x",, }',
      400,
      'INVALID_INPUT',
      /^body: not valid JSON \(.*position 13/,
    ],
    // Decoded as it was, each bad byte became U+FFFD: two different names stored as one.
    ['/v1/runs', {}, notUtf8, 400, 'INVALID_INPUT', /^body: not valid UTF-8/],
    [
      '/graphql',
      {},
      Buffer.from([0x7b, 0xff, 0x7d]),
      400,
      'INVALID_INPUT',
      /^body: not valid UTF-8/,
    ],
    // The charset as body-parser reads it: a quoted parameter that only looks like one is not it.
    [
      '/v1/runs',
      { 'content-type': 'application/json; x="a;charset=utf-16"' },
      notUtf8,
      400,
      'INVALID_INPUT',
      /^body: not valid UTF-8/,
    ],
    [
      '/v1/runs',
      { 'content-type': 'application/json; charset=latin-1' },
      run,
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /^charset "latin-1" is not accepted for JSON; send UTF-8$/,
    ],
    [
      '/v1/runs',
      { 'content-encoding': 'gzip' },
      run,
      400,
      'INVALID_INPUT',
      /^body: not valid gzip \(incorrect header check\)/,
    ],
    [
      '/v1/runs',
      { 'content-encoding': 'zstd' },
      run,
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /^Content-Encoding "zstd" is not accepted; send gzip, deflate, br or no encoding$/,
    ],
    // Not parsed, and so taken as no body at all ("required object is missing"; {} for advantages).
    [
      '/v1/runs',
      { 'content-type': 'text/plain' },
      run,
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /^send the body as JSON with Content-Type: application\/json \(got "text\/plain"\)$/,
    ],
    [
      `/v1/runs/${runId}/iterations/0/advantages`,
      { 'content-type': 'text/plain' },
      '{"method":"grpo","params":{"normalize":false}}',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /^send the body as JSON/,
    ],
  ];
  for (const [route, headers, body, status, error, message] of cases) {
    const res = await api(`${server.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const json = (await res.json()) as { error: string; message: string };
    expect([route, headers, res.status, json.error]).toEqual([route, headers, status, error]);
    expect(json.message).toMatch(message);
  }
  expect(await rowCounts(server.databaseUrl)).toEqual(before);
  // The same body compressed as it says is read.
  const gz = await api(`${server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    body: gzipSync(run),
  });
  expect(gz.status).toBe(201);
});

test('a compressed body is refused with 415 naming its encoding, for events and checkpoints', async () => {
  const before = await rowCounts(server.databaseUrl);
  const line = JSON.stringify({
    id: '00000000-0000-4000-8000-00000000e5c0',
    type: 'metrics.logged',
    data: { iteration: 0, metrics: { loss: 1 } },
  });
  for (const [route, method, type] of [
    [`/v1/runs/${runId}/events`, 'POST', 'application/x-ndjson'],
    [`/v1/runs/${runId}/checkpoints/0`, 'PUT', 'application/octet-stream'],
  ] as const) {
    const res = await api(`${server.url}${route}`, {
      method,
      headers: { 'content-type': type, 'content-encoding': 'gzip' },
      body: gzipSync(`${line}\n`),
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({
      message: 'Content-Encoding "gzip" is not accepted here; send the body uncompressed',
    });
  }
  expect(await rowCounts(server.databaseUrl)).toEqual(before);
});

describe('GraphQL mutations validate the same way', () => {
  test('appendEvents names the event and the path, with a BAD_USER_INPUT code, and stores nothing', async () => {
    const before = await rowCounts(server.databaseUrl);
    const res = await gql(
      server,
      'mutation($id: ID!, $events: [JSON!]!) { appendEvents(runId: $id, events: $events) { accepted } }',
      {
        id: runId,
        events: [
          {
            id: '00000000-0000-4000-8000-000000000001',
            type: 'metrics.logged',
            data: { iteration: 0, metrics: { loss: 1 } },
          },
          {
            id: '00000000-0000-4000-8000-000000000002',
            type: 'metrics.logged',
            data: { iteration: -1, metrics: {} },
          },
        ],
      },
    );
    expect(res.errors?.[0]?.message).toMatch(/^events\[1\]: data\.iteration: /);
    expect(res.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      error: 'INVALID_EVENT',
      path: 'data.iteration',
    });
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
  });

  test('appendEvents to an unknown run is NOT_FOUND', async () => {
    const res = await gql(
      server,
      'mutation { appendEvents(runId: "11111111-1111-4111-8111-111111111111", events: []) { accepted } }',
    );
    expect(res.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('createRun without an env is rejected by GraphQL itself; with an empty name by the run schema', async () => {
    const missing = await gql(
      server,
      'mutation { createRun(input: { name: "x", method: "grpo" }) { id } }',
    );
    expect(missing.errors?.[0]?.message).toMatch(/env/);
    const empty = await gql(
      server,
      'mutation { createRun(input: { name: "", env: "e", method: "grpo" }) { id } }',
    );
    expect(empty.errors?.[0]?.message).toMatch(/^name: /);
    expect(empty.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  test('POST /v1/runs with a bad body is a 400 naming the field', async () => {
    const res = await api(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', env: 'e', method: 'grpo', seed: 1.5 }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'INVALID_INPUT', path: 'seed' });
    const fork = await api(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', env: 'e', method: 'grpo', forkIteration: 2 ** 31 }),
    });
    expect(fork.status).toBe(400); // stored as an integer: beyond it, PostgreSQL's error was a 500
    expect(await fork.json()).toMatchObject({ error: 'INVALID_INPUT', path: 'forkIteration' });
  });

  test('POST /v1/runs names every mistake of its body at once, the first as path and reason', async () => {
    const res = await api(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: '', env: 'e', method: 'grpo', seed: 1.5, tags: [7] }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as {
      message: string;
      path: string;
      issues: { path: string; reason: string }[];
    };
    expect(body.issues.map((i) => i.path)).toEqual(['name', 'seed', 'tags[0]']);
    expect(body.path).toBe('name');
    expect(body.message.split('; ').map((m) => m.split(':')[0])).toEqual([
      'name',
      'seed',
      'tags[0]',
    ]);
    const graphql = await gql(
      server,
      'mutation { createRun(input: { name: "", env: "e", method: "grpo", tags: [""] }) { id } }',
    );
    expect(graphql.errors?.[0]?.message).toMatch(/^name: .+; tags\[0\]: /);
  });

  test('POST /v1/runs refuses a field it does not know: a misspelt parent would have made a run that is no fork', async () => {
    const before = await rowCounts(server.databaseUrl);
    const res = await api(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'fork?',
        env: 'e',
        method: 'grpo',
        parentRunID: '11111111-1111-4111-8111-111111111111',
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: 'INVALID_INPUT',
      path: 'parentRunID',
      message:
        'parentRunID: unknown field; the fields here are id, name, project, env, method, params, config, seed, tags, parentRunId, forkIteration',
    });
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
  });
});
