import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { eventBodyHash, validateEvent, type ClientEvent } from '@creditlab/events';
import { wireEvent } from '../apps/server/src/rollouts/event-body';
import { request } from 'node:http';
import pg from 'pg';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { fixtureBatches } from './support/fixture-batches';
import { rowCounts } from './support/row-counts';
import { metric, startTestServer, type ServerProcess, ADMIN_KEY, api } from './support/test-server';

/** Retries and races leave exactly one copy of every event, and seqs stay gap-free. */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
});
afterAll(() => server.stop());

const ndjson = (events: ClientEvent[]) => events.map((e) => JSON.stringify(e)).join('\n') + '\n';
const post = (runId: string, body: string) =>
  api(`${server.url}/v1/runs/${runId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body,
  });

async function seqs(runId: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  try {
    return (
      await c.query('SELECT seq FROM events WHERE run_id = $1 ORDER BY seq', [runId])
    ).rows.map((r) => Number(r.seq));
  } finally {
    await c.end();
  }
}

test('the same request sent twice is stored once; the second answer counts duplicates', async () => {
  const { id } = await client.createRun({ name: 'twice', env: 'e', method: 'grpo' });
  const body = ndjson(rolloutEvents(0, fixtureBatches()[0]![1], 40));
  const first = (await (await post(id, body)).json()) as { accepted: number; lastSeq: number };
  const before = await rowCounts(server.databaseUrl);
  const second = await (await post(id, body)).json();
  expect(first).toMatchObject({ duplicates: 0, lastSeq: first.accepted + 1 });
  expect(second).toEqual({ accepted: 0, duplicates: first.accepted, lastSeq: first.lastSeq });
  expect(await rowCounts(server.databaseUrl)).toEqual(before);
});

test('a large body (checked on the preparing thread) and its events sent one by one (checked in the request) are the same events', async () => {
  // Lines under the 64 KiB at which a body goes to the thread; the body well over it.
  const batch = syntheticBatchJson(
    {
      groups: 24,
      groupSize: 4,
      maxSteps: 20,
      statesPerGroup: 6,
      textLength: 120,
      embeddingDim: 8,
      withOptionalFields: true,
    },
    7,
  );
  const events = [
    ...rolloutEvents(0, batch, 60, { columnar: false }),
    ...rolloutEvents(1, batch, 60, { columnar: true }),
  ];
  const lines = events.map((e) => ndjson([e]));
  expect(Math.max(...lines.map((l) => Buffer.byteLength(l)))).toBeLessThan(64 * 1024);
  expect(Buffer.byteLength(lines.join(''))).toBeGreaterThan(128 * 1024);
  const whole = (await client.createRun({ name: 'whole first', env: 'e', method: 'grpo' })).id;
  const single = (await client.createRun({ name: 'singly first', env: 'e', method: 'grpo' })).id;
  const threadLines = await metric(server, 'creditlab_ingest_thread_lines_total');
  expect(await (await post(whole, lines.join(''))).json()).toMatchObject({
    accepted: events.length,
    duplicates: 0,
  });
  // all but the first line, which the request checks itself (a body of one event never waits on the thread)
  expect(await metric(server, 'creditlab_ingest_thread_lines_total')).toBe(
    threadLines + events.length - 1,
  );
  for (const line of lines) {
    expect(await (await post(whole, line)).json()).toMatchObject({ accepted: 0, duplicates: 1 });
    expect(await (await post(single, line)).json()).toMatchObject({ accepted: 1, duplicates: 0 });
  }
  expect(await (await post(single, lines.join(''))).json()).toMatchObject({
    accepted: 0,
    duplicates: events.length,
  });
  // The single lines were checked in their requests, the two bodies (but their first lines) on the thread.
  expect(await metric(server, 'creditlab_ingest_thread_lines_total')).toBe(
    threadLines + 2 * (events.length - 1),
  );
  // Stored alike: each event's digest and body the same whichever thread checked it.
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  try {
    const stored = async (runId: string) =>
      (
        await c.query(
          `SELECT id, encode(body_hash, 'hex') AS hash, md5(body) AS body, data FROM events WHERE run_id = $1 AND seq > 1 ORDER BY seq`,
          [runId],
        )
      ).rows;
    const [a, b] = [await stored(whole), await stored(single)];
    expect(a).toHaveLength(events.length);
    expect(a).toEqual(b);
  } finally {
    await c.end();
  }
});

test('a repeated id inside one request is stored once', async () => {
  const { id } = await client.createRun({ name: 'dup-in-request', env: 'e', method: 'grpo' });
  const e: ClientEvent = {
    id: newEventId(),
    type: 'metrics.logged',
    data: { iteration: 0, metrics: { loss: 1 } },
  };
  const res = await (await post(id, ndjson([e, e, { ...e, id: e.id.toUpperCase() }]))).json();
  expect(res).toEqual({ accepted: 1, duplicates: 2, lastSeq: 2 });
});

test('a request cut mid-body stores nothing, and its retry stores everything once', async () => {
  const { id } = await client.createRun({ name: 'cut', env: 'e', method: 'gigpo' });
  // Large enough (≈ 40k steps) that the server has already written a chunk (16k steps, or 4 MiB
  // of log bodies) inside the transaction when the cut comes.
  const batch = syntheticBatchJson(
    { groups: 1000, groupSize: 8, maxSteps: 50, statesPerGroup: 20, maxTotalSteps: 40_000 },
    5,
  );
  const body = ndjson(rolloutEvents(0, batch, 200));
  const before = await rowCounts(server.databaseUrl);
  const statementsBefore = await metric(server, 'creditlab_db_statements_total');
  await new Promise<void>((resolve) => {
    const req = request(`${server.url}/v1/runs/${id}/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-ndjson',
        'content-length': Buffer.byteLength(body),
        authorization: `Bearer ${ADMIN_KEY}`,
      },
    });
    req.on('error', () => resolve()); // the cut we cause
    req.on('response', () => resolve());
    // Send whole lines up to the middle, wait until the server is writing chunks of them, then cut.
    const cut = body.lastIndexOf('\n', body.length / 2) + 1;
    req.write(body.slice(0, cut), () => {
      void (async () => {
        for (
          let i = 0;
          i < 100 && (await metric(server, 'creditlab_db_statements_total')) < statementsBefore + 5;
          i++
        ) {
          await new Promise((r) => setTimeout(r, 50));
        }
        req.destroy();
      })();
    });
  });
  // Wait for the server to notice the cut and roll back (it counts the rejected request then).
  const rejected = () =>
    metric(server, 'creditlab_rejected_requests_total{code="CLIENT_CLOSED_REQUEST"}');
  for (let i = 0; i < 200 && (await rejected()) === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  // The server did write chunks of the cut request (inside its transaction) before rolling it all back.
  expect(await metric(server, 'creditlab_db_statements_total')).toBeGreaterThan(
    statementsBefore + 5,
  );
  expect(
    await metric(server, 'creditlab_rejected_requests_total{code="CLIENT_CLOSED_REQUEST"}'),
  ).toBe(1);
  expect(await rowCounts(server.databaseUrl)).toEqual(before);
  const retry = (await (await post(id, body)).json()) as { accepted: number; duplicates: number };
  expect(retry.duplicates).toBe(0);
  expect(await seqs(id)).toEqual(Array.from({ length: retry.accepted + 1 }, (_, i) => i + 1));
});

test('in a request of several chunks, events stored before are found in every chunk: dropped, or refused if changed', async () => {
  const { id } = await client.createRun({ name: 'stored', env: 'e', method: 'grpo' });
  // About 20k steps each: a body of two is projected in more than one chunk (16k steps), and the
  // events of the second are looked up while the first is being written.
  const iteration = (i: number) =>
    rolloutEvents(
      i,
      syntheticBatchJson(
        { groups: 400, groupSize: 8, maxSteps: 30, statesPerGroup: 10, maxTotalSteps: 20_000 },
        40 + i,
      ),
      400,
      { columnar: true },
    );
  const first = iteration(0);
  expect(await (await post(id, ndjson(first))).json()).toMatchObject({
    accepted: first.length,
    duplicates: 0,
  });
  const second = iteration(1);
  expect(await (await post(id, ndjson([...second, ...first]))).json()).toMatchObject({
    accepted: second.length,
    duplicates: first.length,
  });
  const before = await rowCounts(server.databaseUrl);
  const last = first.at(-1)!;
  const changed = { ...last, data: { ...last.data, iteration: 9 } } as ClientEvent;
  const third = iteration(2);
  const refused = await post(id, ndjson([...third, ...first.slice(0, -1), changed]));
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({
    line: third.length + first.length,
    path: 'id',
  });
  expect(await rowCounts(server.databaseUrl)).toEqual(before);
});

test('two clients appending to one run concurrently: gap-free seqs, nothing lost', async () => {
  const { id } = await client.createRun({ name: 'race', env: 'e', method: 'grpo' });
  const mk = (who: string, n: number): ClientEvent[] =>
    Array.from({ length: n }, (_, i) => ({
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: i, metrics: { [who]: i } },
    }));
  const a = mk('a', 300);
  const b = mk('b', 300);
  const [ra, rb] = await Promise.all([
    new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 10 }).appendEvents(id, a),
    new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 7 }).appendEvents(id, b),
  ]);
  expect(ra.accepted + rb.accepted).toBe(600);
  expect(await seqs(id)).toEqual(Array.from({ length: 601 }, (_, i) => i + 1));
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  const ids = (await c.query('SELECT id FROM events WHERE run_id = $1', [id])).rows.map(
    (r) => r.id as string,
  );
  await c.end();
  const stored = new Set(ids);
  expect([...a, ...b].filter((e) => !stored.has(e.id))).toEqual([]);
});

test('the client retries a 5xx answer and the server stores the batch once', async () => {
  const { id } = await client.createRun({ name: 'retry', env: 'e', method: 'grpo' });
  let calls = 0;
  const flaky: typeof fetch = async (input, init) => {
    calls++;
    const res = await fetch(input, init);
    // The first answer is lost on the way back, as if a proxy failed after the server committed.
    return calls === 1 ? new Response('{"message":"bad gateway"}', { status: 502 }) : res;
  };
  const events = rolloutEvents(0, fixtureBatches()[2]![1], 50);
  const summary = await new CreditlabClient({
    url: server.url,
    apiKey: ADMIN_KEY,
    fetch: flaky,
    retryDelayMs: 10,
    batchSize: 1000,
  }).appendEvents(id, events);
  expect(summary).toMatchObject({ retries: 1, accepted: 0, duplicates: events.length });
  expect(await seqs(id)).toHaveLength(events.length + 1);
});

test('an event stored with the first hash form (before the compact body) is still a duplicate when retried, and a conflict when changed', async () => {
  const { id } = await client.createRun({ name: 'old hash', env: 'e', method: 'grpo' });
  // Steps as objects: the only form there was before the compact body.
  const sent = rolloutEvents(0, fixtureBatches()[0]![1], 2000, { columnar: false });
  await client.appendEvents(id, sent);
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    // As a database written by the previous release: each event's hash is eventBodyHash of its data.
    const rows = await db.query<{
      seq: string;
      id: string;
      type: string;
      data: Record<string, unknown>;
      body: Buffer | null;
    }>('SELECT seq, id, type, data, body FROM events WHERE run_id = $1', [id]);
    await db.query('ALTER TABLE events DISABLE TRIGGER events_append_only');
    for (const row of rows.rows) {
      const valid = validateEvent(wireEvent(row), 'server');
      if (!valid.ok) throw new Error(valid.issue.message);
      await db.query('UPDATE events SET body_hash = $3 WHERE run_id = $1 AND seq = $2', [
        id,
        row.seq,
        eventBodyHash(valid.event.type, valid.event.data),
      ]);
    }
    await db.query('ALTER TABLE events ENABLE TRIGGER events_append_only');
  } finally {
    await db.end();
  }
  expect(await client.appendEvents(id, sent)).toMatchObject({
    accepted: 0,
    duplicates: sent.length,
  });
  const changed = { ...sent[0]!, data: { ...sent[0]!.data, iteration: 7 } } as ClientEvent;
  await expect(client.appendEvents(id, [changed])).rejects.toThrow(/409 CONFLICT/);
});
