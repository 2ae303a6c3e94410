import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import { connect } from 'node:net';
import pg from 'pg';
import { fixtureBatches } from './support/fixture-batches';
import { rowCounts } from './support/row-counts';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * What a hostile or careless client can send besides malformed lines (those are in
 * test/fixtures/not-ok): reused event ids, events after the run finished, forged cursors,
 * checkpoints with any content type. Each gets a 4xx that says what and where; nothing is
 * half-written; no answer carries the server's internals.
 */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
});
afterAll(() => server.stop());

const ndjson = (events: unknown[]) => events.map((e) => JSON.stringify(e)).join('\n') + '\n';
const post = async (runId: string, events: unknown[]) => {
  const res = await api(`${server.url}/v1/runs/${runId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: ndjson(events),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const metrics = (iteration: number, loss: number, id = newEventId()): ClientEvent => ({
  id,
  type: 'metrics.logged',
  data: { iteration, metrics: { loss } },
});
const newRun = async (name: string) =>
  (await client.createRun({ name, env: 'e', method: 'grpo' })).id;

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** An answer that shows nothing of the server's insides. */
function expectNoInternals(text: string): void {
  expect(text).not.toMatch(/prisma|SELECT |INSERT |\.ts:\d|node_modules|\bat \w+ \(|stacktrace/i);
}

describe('event ids', () => {
  test('an id reused with another body is a 409 naming the id; nothing of the request is stored', async () => {
    const runId = await newRun('reused id');
    const id = newEventId();
    expect((await post(runId, [metrics(0, 1, id)])).status).toBe(200);
    const before = await rowCounts(server.databaseUrl);
    const res = await post(runId, [metrics(1, 5), metrics(0, 2, id)]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'CONFLICT', line: 2, path: 'id', eventId: id });
    expect(res.body.message).toContain(`event id ${id} is already used by event 2`);
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
    // the same body again is a retry: acknowledged, stored once
    expect((await post(runId, [metrics(0, 1, id)])).body).toMatchObject({
      accepted: 0,
      duplicates: 1,
    });
  });

  test('inside one request too; key order and a compact vector do not make another body', async () => {
    const runId = await newRun('reused in request');
    const id = newEventId();
    const res = await post(runId, [metrics(0, 1, id), metrics(0, 3, id)]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ line: 2, path: 'id' });
    expect(res.body.message).toContain('already used by line 1');

    const embedding = [0.25, -1.5, 3];
    const step = { state: 's', action: 'a', reward: 1, embedding };
    const event = {
      id: newEventId(),
      type: 'rollouts.appended',
      data: { iteration: 0, groups: [{ id: 'g', trajectories: [{ id: 't', steps: [step] }] }] },
    };
    expect((await post(runId, [event])).status).toBe(200);
    const compact = Buffer.from(new Float32Array(embedding).buffer).toString('base64');
    const reordered = {
      data: {
        groups: [
          {
            trajectories: [
              { steps: [{ embedding: compact, reward: 1, action: 'a', state: 's' }], id: 't' },
            ],
            id: 'g',
          },
        ],
        iteration: 0,
      },
      type: 'rollouts.appended',
      id: event.id,
    };
    expect((await post(runId, [reordered])).body).toMatchObject({ accepted: 0, duplicates: 1 });
  });
});

describe('a finished run', () => {
  test('refuses events (409) until run.resumed reopens it; a retried finishing request is still a duplicate', async () => {
    const runId = await newRun('finished');
    const finishing = [
      metrics(0, 1),
      { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
    ];
    expect((await post(runId, finishing)).status).toBe(200);
    expect((await post(runId, finishing)).body).toMatchObject({ accepted: 0, duplicates: 2 });

    const before = await rowCounts(server.databaseUrl);
    const late = await post(runId, [metrics(1, 1)]);
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'RUN_FINISHED', line: 1, runStatus: 'completed' });
    expect(late.body.message).toContain('send a run.resumed event first');
    // A request whose event the server writes (here a checkpoint's) is told which event it was.
    const checkpoint = await api(`${server.url}/v1/runs/${runId}/checkpoints/0`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'weights',
    });
    expect(checkpoint.status).toBe(409);
    const refusal = (await checkpoint.json()) as Record<string, unknown>;
    expect(refusal.message).toMatch(
      /^the checkpoint\.saved event this request records: run .* is completed; send a run\.resumed event first/,
    );
    // …and given no line: the caller sent no body of lines.
    expect(refusal).toMatchObject({ error: 'RUN_FINISHED', path: 'type' });
    expect(refusal).not.toHaveProperty('line');
    // GraphQL's appendEvents names an item of its events list, by index.
    const listed = await gql(
      server,
      'mutation($runId: ID!, $events: [JSON!]!) { appendEvents(runId: $runId, events: $events) { accepted } }',
      { runId, events: [metrics(1, 1), metrics(2, 1)] },
    );
    expect(listed.errors?.[0]?.message).toMatch(/^events\[0\]: run .* is completed/);
    expect(listed.errors?.[0]?.extensions).toMatchObject({ index: 0, path: 'type' });
    expect(listed.errors?.[0]?.extensions).not.toHaveProperty('line');
    const again = await post(runId, [
      { id: newEventId(), type: 'run.finished', data: { status: 'failed' } },
    ]);
    expect(again.status).toBe(409);
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
    const status = async () =>
      (
        await gql<{ run: { status: string; finishedAt: string | null } }>(
          server,
          'query($id: ID!) { run(id: $id) { status finishedAt } }',
          { id: runId },
        )
      ).data!.run;
    expect(await status()).toMatchObject({ status: 'COMPLETED' });

    const resumed = await post(runId, [
      { id: newEventId(), type: 'run.resumed', data: { reason: 'more iterations' } },
      metrics(1, 0.5),
    ]);
    expect(resumed.status).toBe(200);
    expect(await status()).toEqual({ status: 'RUNNING', finishedAt: null });
    const twice = await post(runId, [{ id: newEventId(), type: 'run.resumed', data: {} }]);
    expect(twice.status).toBe(409);
    expect(twice.body.message).toContain('is running');
  });

  test('a checkpoint upload to a finished run stores neither the bytes nor the event', async () => {
    const runId = await newRun('finished checkpoint');
    await post(runId, [{ id: newEventId(), type: 'run.finished', data: { status: 'aborted' } }]);
    const res = await api(`${server.url}/v1/runs/${runId}/checkpoints/1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array([1, 2, 3]),
    });
    expect(res.status).toBe(409);
    const rows = await query('SELECT 1 FROM checkpoints WHERE run_id = $1', [runId]);
    expect(rows).toHaveLength(0);
    // Its parts were written as they came, and deleted with the refusal.
    expect(await query('SELECT 1 FROM checkpoint_parts WHERE run_id = $1', [runId])).toHaveLength(
      0,
    );
  });
});

describe('run creation', () => {
  test('a NUL or a lone surrogate in a run’s name, tags or config is a 400 naming the field; no run is made', async () => {
    const before = await rowCounts(server.databaseUrl);
    for (const [body, path] of [
      [{ name: 'a\u0000b', env: 'e', method: 'grpo' }, 'name'],
      [{ name: 'x', env: 'e', method: 'grpo', tags: ['ok', 'b\ud800'] }, 'tags[1]'],
      [
        { name: 'x', env: 'e', method: 'grpo', config: { nested: { k: '\u0000' } } },
        'config.nested.k',
      ],
    ] as const) {
      const res = await api(`${server.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'INVALID_INPUT', path });
    }
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
  });

  test('a JSON body that is not an object (null, a number, text, a boolean, a list) is a 400 that says so; nothing is written', async () => {
    const runId = await newRun('null body');
    const before = await rowCounts(server.databaseUrl);
    for (const [body, received] of [
      ['null', 'null'],
      ['42', 'number'],
      ['"text"', 'string'],
      ['true', 'boolean'],
      ['[]', 'array'],
    ] as const) {
      const res = await api(`${server.url}/v1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(400);
      const answer = (await res.json()) as Record<string, unknown>;
      expect(answer).toMatchObject({ error: 'INVALID_INPUT', path: '' });
      expect(answer.message).toBe(`body: Invalid input: expected object, received ${received}`);
    }
    // The trainer's advantages POST too: `null` is not "no body".
    const advantages = await api(`${server.url}/v1/runs/${runId}/iterations/0/advantages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'null',
    });
    expect(advantages.status).toBe(400);
    expect(((await advantages.json()) as { message: string }).message).toBe(
      'body: Invalid input: expected object, received null',
    );
    expect(await rowCounts(server.databaseUrl)).toEqual(before);
  });
});

describe('checkpoint uploads', () => {
  test('take the body whatever Content-Type curl or a library sends', async () => {
    const runId = await newRun('content types');
    for (const [k, type] of [
      [1, 'application/x-www-form-urlencoded'],
      [2, 'application/json'],
      [3, 'text/plain'],
    ] as const) {
      const bytes = Buffer.from(`{"weights": [${k}]}`);
      const res = await api(`${server.url}/v1/runs/${runId}/checkpoints/${k}`, {
        method: 'PUT',
        headers: { 'content-type': type },
        body: bytes,
      });
      expect(res.status).toBe(201);
      expect(Buffer.from(await (await client.downloadCheckpoint(runId, k)).data)).toEqual(bytes);
    }
  });

  test('a checkpoint number of 2^31 or more is a 400 naming it', async () => {
    const runId = await newRun('big k');
    const res = await api(`${server.url}/v1/runs/${runId}/checkpoints/2147483648`, {
      method: 'PUT',
      body: new Uint8Array([1]),
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: 'INVALID_INPUT', path: 'iteration' });
    expect(text).toContain('2147483647');
  });
});

describe('cursors and page sizes', () => {
  test('a forged or garbled cursor is BAD_USER_INPUT, with no SQL or Prisma text', async () => {
    const runId = await newRun('cursors');
    await client.appendEvents(runId, rolloutEvents(0, fixtureBatches()[0]![1]));
    const forged = (parts: unknown) => Buffer.from(JSON.stringify(parts)).toString('base64url');
    for (const [q, after] of [
      ['{ runs(after: $after) { nodes { id } } }', forged(['not a date', 'x'])],
      ['{ runs(after: $after) { nodes { id } } }', 'garbage'],
      [
        `{ run(id: "${runId}") { groups(iteration: 0, after: $after) { nodes { id } } } }`,
        forged(['abc']),
      ],
      [
        `{ run(id: "${runId}") { groups(iteration: 0, after: $after) { nodes { id } } } }`,
        forged([1e12]),
      ],
    ] as const) {
      const res = await gql(server, `query($after: String) ${q}`, { after });
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toContain('is not a cursor this API issued');
      expectNoInternals(JSON.stringify(res));
    }
    const page = await gql(server, '{ runs(first: 100000) { nodes { id } } }');
    expect(page.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});

describe('iterations', () => {
  test('a negative iteration in groups, group or trajectory is BAD_USER_INPUT naming it, not an empty answer', async () => {
    const runId = await newRun('negative iteration');
    for (const field of [
      'groups(iteration: -1) { nodes { id } }',
      'group(iteration: -1, id: "g") { id }',
      'trajectory(iteration: -1, id: "t") { id }',
    ]) {
      const res = await gql(server, `{ run(id: "${runId}") { ${field} } }`);
      expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message).toBe(
        'iteration: a whole number from 0 to 2147483647, got -1',
      );
    }
    const fine = await gql(
      server,
      `{ run(id: "${runId}") { groups(iteration: 0) { nodes { id } } } }`,
    );
    expect(fine).toEqual({ data: { run: { groups: { nodes: [] } } } });
  });
});

describe('GraphQL documents', () => {
  test('fragments that each spread the next twice are refused at once, by their expanded size', async () => {
    let doc = '{ runs { nodes { ...F0 } } }\n';
    for (let i = 0; i < 40; i++) doc += `fragment F${i} on Run { ...F${i + 1} ...F${i + 1} }\n`;
    doc += 'fragment F40 on Run { id }\n';
    expect(doc.length).toBeLessThan(2000);
    const res = await gql(server, doc);
    expect(res.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.errors?.[0]?.message).toMatch(/expands to 1099511627778 fields .* limit of 10000/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  test('a document of too many tokens is refused by the parser', async () => {
    const doc = `{ runs { nodes { ${Array.from({ length: 30_000 }, () => 'id').join(' ')} } } }`;
    const res = await gql(server, doc);
    expect(res.errors?.[0]?.message).toMatch(/more th\w+ 20000 tokens/);
  });
});

describe('compare', () => {
  test('a list that repeats an iteration counts it once; an absurd list is refused', async () => {
    const runId = await newRun('compare repeats');
    const [, batch] = fixtureBatches()[0]!;
    await client.appendEvents(runId, rolloutEvents(0, batch));
    const steps = batch.groups
      .flatMap((g) => g.trajectories)
      .reduce((n, t) => n + t.steps.length, 0);
    const q =
      'query($r: ID!, $its: [Int!]) { compare(runId: $r, methods: [{ name: "grpo" }], iterations: $its) { stepCount iterations } }';
    const res = await gql<{ compare: { stepCount: number; iterations: number[] } }>(server, q, {
      r: runId,
      its: Array.from({ length: 60_000 }, () => 0),
    });
    expect(res.data?.compare).toEqual({ stepCount: steps, iterations: [0] });
    const huge = await gql(server, q, { r: runId, its: Array.from({ length: 100_001 }, () => 0) });
    expect(huge.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(huge.errors?.[0]?.message).toContain('at most 100000 entries');
  });
});

describe('malformed HTTP', () => {
  /** Sends `bytes` on a fresh connection; what comes back before the server closes it. */
  const raw = (bytes: string) =>
    new Promise<{ head: string; body: unknown }>((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      const socket = connect(Number(port), hostname, () => socket.write(bytes));
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString()));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head = '', body = ''] = answer.split('\r\n\r\n');
        resolve({ head, body: body ? JSON.parse(body) : undefined });
      });
    });

  test('a request Node cannot parse is answered in the API’s JSON error shape, saying what is wrong', async () => {
    const garbled = await raw('GET /v1/runs HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(garbled.head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(garbled.head).toContain('Content-Type: application/json');
    expect(garbled.body).toMatchObject({
      statusCode: 400,
      error: 'INVALID_INPUT',
      message: expect.stringMatching(/^malformed HTTP request: .+ \(HPE_[A-Z_]+\)$/),
    });
    const huge = await raw(
      `GET /v1/runs HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(huge.head).toMatch(/^HTTP\/1\.1 431 /);
    expect(huge.body).toEqual({
      statusCode: 431,
      error: 'HEADERS_TOO_LARGE',
      message:
        'the request line and headers are larger than the server reads (16 KiB): send long values in the body',
    });
    // A keep-alive connection's second request, malformed, sent once the first is answered: answered too.
    const conversation = await new Promise<string>((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      const socket = connect(Number(port), hostname, () =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      let answer = '';
      socket.on('data', (c: Buffer) => {
        const first = answer === '';
        answer += c.toString();
        if (first) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(answer));
    });
    expect(conversation).toMatch(/^HTTP\/1\.1 200 [^]*HTTP\/1\.1 400 Bad Request\r\n/);
    expect(conversation).toMatch(
      /"error":"INVALID_INPUT","message":"malformed HTTP request: [^"]+ \(HPE_[A-Z_]+\)"/,
    );
    // The server goes on serving.
    expect((await api(`${server.url}/healthz`)).status).toBe(200);
  });
});
