import {
  CreditlabApiError,
  CreditlabClient,
  float64Base64,
  newEventId,
  rolloutEvents,
} from '@creditlab/client';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClientEvent } from '@creditlab/events';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { rowCounts } from './support/row-counts';
import { serverForFile } from './support/file-server';
import { sqlQuery } from './support/sql-query';
import { api, gql } from './support/test-server';

/**
 * The columnar form of rollouts.appended (docs/events.md, "Columnar rollouts"): the same steps sent
 * as columns are stored, read back and estimated exactly as when sent one object per step; bad
 * columns are refused naming the line and the column down to the step, and nothing is stored.
 */
const ctx = serverForFile();

const query = (sql: string, params: unknown[]) => sqlQuery(ctx.server.databaseUrl, sql, params);

/** Every projected row of a run, without the run id (which differs between the two runs). */
async function projection(runId: string): Promise<Record<string, Record<string, unknown>[]>> {
  const of = (table: string, order: string) =>
    query(`SELECT * FROM ${table} WHERE run_id = $1 ORDER BY ${order}`, [runId]).then((rows) =>
      rows.map(({ run_id: _run, ...row }) => row),
    );
  return {
    steps: await of('steps', 'iteration, group_ord, traj_ord, idx'),
    trajectories: await of('trajectories', 'iteration, group_ord, ord'),
    groups: await of('rollout_groups', 'iteration, ord'),
    iterations: await of('iterations', 'iteration'),
    texts: await of('texts', 'id'),
  };
}

const EVENTS_QUERY = `query($id: ID!) { run(id: $id) { embeddingDim events(first: 100) {
  nodes { seq type iteration data stepCount } } } }`;

async function advantages(runId: string, iteration: number, method: string): Promise<number[]> {
  const res = await api(
    `${ctx.server.url}/v1/runs/${runId}/iterations/${iteration}/advantages?method=${method}`,
    { headers: { accept: 'application/octet-stream' } },
  );
  expect(res.status).toBe(200);
  return Array.from(new Float32Array(await res.arrayBuffer()));
}

test('the same steps sent as columns and as objects are stored, read back and estimated alike', async () => {
  const batches = [0, 1].map((seed) =>
    syntheticBatchJson(
      {
        groups: 3,
        groupSize: 4,
        maxSteps: 12,
        statesPerGroup: 5,
        textLength: 20,
        embeddingDim: 4,
        withOptionalFields: true,
      },
      seed,
    ),
  );
  // Fields beyond rollout-batch/v1 on some steps: the `extra` column in the columnar form.
  let k = 0;
  for (const batch of batches)
    for (const g of batch.groups)
      for (const t of g.trajectories)
        for (const step of t.steps as unknown as Record<string, unknown>[]) {
          if (k % 3 === 0) step.info = { room: k, seen: ['fridge', k % 2 === 0] };
          if (k % 5 === 0) step.taskSeed = k;
          k++;
        }
  const rows = await ctx.client.createRun({ name: 'rows', env: 'e', method: 'gigpo' });
  const columns = await ctx.client.createRun({ name: 'columns', env: 'e', method: 'gigpo' });
  for (const [i, batch] of batches.entries()) {
    // 7 steps per event at most: trajectories continue across events in both forms.
    await ctx.client.appendEvents(rows.id, rolloutEvents(i, batch, 7, { columnar: false }));
    const columnar = rolloutEvents(i, batch, 7, { columnar: true });
    expect(columnar.every((e) => 'columns' in e.data)).toBe(true);
    expect(columnar.some((e) => 'extra' in (e.data as { columns: object }).columns)).toBe(true);
    await ctx.client.appendEvents(columns.id, columnar);
  }
  const stored = await projection(rows.id);
  expect(stored.steps!.some((s) => s.nll === null)).toBe(true);
  expect(stored.steps!.filter((s) => s.extra !== null).length).toBeGreaterThan(10);
  expect(stored.steps!.length).toBeGreaterThan(40);
  expect(await projection(columns.id)).toEqual(stored);

  const read = async (id: string) => (await gql(ctx.server, EVENTS_QUERY, { id })).data;
  expect(await read(columns.id)).toEqual(await read(rows.id));
  for (const method of ['gigpo', 'bipace', 'ppo-gae'])
    for (const iteration of [0, 1])
      expect(await advantages(columns.id, iteration, method)).toEqual(
        await advantages(rows.id, iteration, method),
      );
});

/** A valid columnar event of two trajectories of 10 steps, with every kind of column. */
function columnarEvent(): ClientEvent & { data: { columns: Record<string, unknown> } } {
  const f32 = (xs: number[]) => Buffer.from(new Float32Array(xs).buffer).toString('base64');
  const range = <T>(f: (i: number) => T) => Array.from({ length: 20 }, (_, i) => f(i));
  return {
    id: newEventId(),
    type: 'rollouts.appended',
    data: {
      iteration: 0,
      groups: [
        {
          id: 'g',
          trajectories: [
            { id: 'a', stepCount: 10 },
            { id: 'b', outcome: 'success', stepCount: 10 },
          ],
        },
      ],
      columns: {
        texts: ['room 0', 'room 1', 'go', 'look'],
        state: range((i) => i % 2),
        action: range((i) => 2 + (i % 2)),
        reward: float64Base64(range((i) => (i === 19 ? 1 : 0))),
        nll: float64Base64(range((i) => (i % 3 ? 0.5 : NaN))),
        value: float64Base64(range((i) => i / 20)),
        nextState: range((i) => (i % 10 === 9 ? -1 : (i + 1) % 2)),
        tokenLogprobs: range((i) => (i % 2 ? f32([-0.5, -1]) : null)),
        embedding: range((i) => f32([i, 1, 0, 0])),
        extra: range((i) => (i % 4 === 0 ? { toolCall: { name: 'look', turn: i } } : null)),
      },
    },
  } as never;
}

const f64 = (xs: number[]) => float64Base64(xs);
const BAD: [string, (c: Record<string, unknown>) => void, string, RegExp][] = [
  ['reward of the wrong length', (c) => (c.reward = f64([1, 2])), 'reward', /has 16 bytes/],
  [
    'a non-finite reward',
    (c) => (c.reward = f64([...Array(17).fill(0), Infinity, 0, 0])),
    'reward[17]',
    // Which trajectory's step, as the row form's path would say: 10 steps each.
    /must be finite \(step 7 of data\.groups\[0\]\.trajectories\[1\]\)$/,
  ],
  ['a NaN reward', (c) => (c.reward = f64([NaN, ...Array(19).fill(0)])), 'reward[0]', /finite/],
  [
    'an infinite value',
    (c) => (c.value = f64([...Array(3).fill(0), -Infinity, ...Array(16).fill(0)])),
    'value[3]',
    /finite/,
  ],
  ['bad base64', (c) => (c.nll = 'not base64!'), 'nll', /must be base64/],
  [
    'a state index out of range',
    (c) => ((c.state as number[])[2] = 4),
    'state[2]',
    /index into texts \(0 to 3\)/,
  ],
  ['an action column too short', (c) => (c.action = [2, 3]), 'action', /has 2 values.*20/],
  ['a next state below −1', (c) => ((c.nextState as number[])[0] = -2), 'nextState[0]', /−1/],
  [
    'an embedding of another dimension',
    (c) => ((c.embedding as string[])[5] = Buffer.alloc(12).toString('base64')),
    'embedding[5]',
    /has 3 dimensions, but this run's embeddings have 4 \(step 5 of data\.groups\[0\]\.trajectories\[0\]\)$/,
  ],
  [
    'an embedding not a multiple of 4 bytes',
    (c) => ((c.embedding as string[])[1] = 'AAAAAAA='),
    'embedding[1]',
    /multiple of 4 bytes/,
  ],
  [
    'a non-finite token log-prob',
    (c) =>
      ((c.tokenLogprobs as string[])[1] = Buffer.from(new Float32Array([NaN]).buffer).toString(
        'base64',
      )),
    'tokenLogprobs[1]',
    /value 0 is not a finite number \(step 1 of data\.groups\[0\]\.trajectories\[0\]\)$/,
  ],
  ['an unknown column', (c) => (c.rewards = 'AAAA'), 'rewards', /unknown column/],
  [
    'a text no step uses (it would be stored for nothing)',
    (c) => (c.texts as string[]).push('never used'),
    'texts[4]',
    // A text is no step's: no step is named.
    /is no step's state, action or next state; send only the texts the steps use$/,
  ],
  ['a text that is not a string', (c) => ((c.texts as unknown[])[1] = 7), 'texts[1]', /string/],
  [
    'a text given twice',
    (c) => (c.texts as string[]).push((c.texts as string[])[2]!),
    'texts[4]',
    /repeats texts\[2\]; send each text once/,
  ],
  ['no reward column', (c) => delete c.reward, 'reward', /required/],
  ['extra fields not a list', (c) => (c.extra = { note: 1 }), 'extra', /array with one object/],
  ['an extra column too short', (c) => (c.extra = [null]), 'extra', /has 1 values.*20/],
  [
    "a step's extra fields not an object",
    (c) => ((c.extra as unknown[])[12] = ['note']),
    'extra[12]',
    /must be an object of the step's fields beyond rollout-batch\/v1, or null \(step 2 of data\.groups\[0\]\.trajectories\[1\]\)$/,
  ],
  [
    'a field of v1 among the extra fields',
    (c) => ((c.extra as unknown[])[3] = { note: 'x', reward: 5 }),
    'extra[3]',
    /holds "reward", a field of rollout-batch\/v1: send it in its column/,
  ],
  [
    // The row form holds a step 7 levels deeper into the event, and a rebuild reads columns back so.
    'extra fields nested deeper than the row form allows',
    (c) => ((c.extra as unknown[])[5] = { deep: nested(57) }),
    'extra[5]',
    /nested deeper than 64 levels counted as in the row form .*at most 57 levels here\) \(step 5 of data\.groups\[0\]\.trajectories\[0\]\)$/,
  ],
];

/** An array `levels` deep around a number: [[…[1]…]]. */
function nested(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

test.each(BAD)(
  'a columnar event with %s is refused naming line and column; nothing is stored',
  async (_what, spoil, path, reason) => {
    const { id } = await ctx.client.createRun({ name: 'bad columns', env: 'e', method: 'gigpo' });
    const before = await rowCounts(ctx.server.databaseUrl);
    const event = columnarEvent();
    spoil(event.data.columns);
    const metrics = {
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: 0, metrics: { loss: 1 } },
    };
    const res = await ctx.post(id, [metrics, event]);
    const body = (await res.json()) as Record<string, string | number>;
    expect(res.status).toBe(400);
    expect(body).toMatchObject({ error: 'INVALID_EVENT', line: 2, path: `data.columns.${path}` });
    expect(body.message).toMatch(
      new RegExp(`^line 2: data\\.columns\\.${path.replace(/[[\]]/g, '\\$&')}: `),
    );
    expect(body.reason).toMatch(reason);
    expect(await rowCounts(ctx.server.databaseUrl)).toEqual(before);
  },
);

test('a trajectory that gives both steps and a stepCount is refused', async () => {
  const { id } = await ctx.client.createRun({ name: 'mixed', env: 'e', method: 'gigpo' });
  const event = columnarEvent();
  (event.data as unknown as { groups: { trajectories: object[] }[] }).groups[0]!.trajectories[0] = {
    id: 'a',
    stepCount: 10,
    steps: [],
  };
  const res = await ctx.post(id, [event]);
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({
    line: 1,
    path: 'data.groups[0].trajectories[0].steps',
    reason: 'unknown field',
  });
});

test('a columnar event sent again is a duplicate; its id with other columns is a conflict', async () => {
  const { id } = await ctx.client.createRun({ name: 'retry', env: 'e', method: 'gigpo' });
  const event = columnarEvent();
  expect(await (await ctx.post(id, [event])).json()).toEqual({
    accepted: 1,
    duplicates: 0,
    lastSeq: 2,
  });
  const before = await rowCounts(ctx.server.databaseUrl);
  const again = await ctx.post(id, [event]);
  expect(await again.json()).toEqual({ accepted: 0, duplicates: 1, lastSeq: 2 });
  const changed = columnarEvent();
  changed.id = event.id;
  changed.data.columns.reward = f64([...Array(19).fill(0), 2]);
  const conflict = await ctx.post(id, [changed]);
  expect(conflict.status).toBe(409);
  expect(await conflict.json()).toMatchObject({ line: 1, path: 'id' });
  // A step's extra fields are the same whatever order their keys come in; other values are not.
  type Extra = { toolCall: { name: string; turn: number } } | null;
  const withExtra = (f: (e: NonNullable<Extra>, i: number) => unknown) => {
    const e = columnarEvent();
    e.id = event.id;
    e.data.columns.extra = (e.data.columns.extra as Extra[]).map((x, i) => x && f(x, i));
    return e;
  };
  const reordered = withExtra(({ toolCall: t }) => ({ toolCall: { turn: t.turn, name: t.name } }));
  expect(await (await ctx.post(id, [reordered])).json()).toEqual({
    accepted: 0,
    duplicates: 1,
    lastSeq: 2,
  });
  const otherExtra = withExtra((x, i) => (i === 4 ? { toolCall: { name: 'go', turn: 4 } } : x));
  expect((await ctx.post(id, [otherExtra])).status).toBe(409);
  expect(await rowCounts(ctx.server.databaseUrl)).toEqual(before);
});

/** A stand-in for an older server: it answers every request with `status` and `body`; a client of it. */
async function standIn(status: number, body: unknown) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    client: new CreditlabClient({ url: `http://127.0.0.1:${port}`, apiKey: 'k', retries: 0 }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

test('a server older than columnar steps refuses them with advice the client adds', async () => {
  // A server before 2026-12-01 validated trajectories in the row form only, so it read a columnar
  // trajectory as one without steps. This server refuses a row-form trajectory without steps in the
  // same words: its answer, replayed by a stand-in for the older server, is what the client sees.
  const { id } = await ctx.client.createRun({ name: 'older server', env: 'e', method: 'gigpo' });
  const noSteps = {
    id: newEventId(),
    type: 'rollouts.appended',
    data: { iteration: 0, groups: [{ id: 'g', trajectories: [{ id: 'a' }] }] },
  } as ClientEvent;
  const metrics = {
    id: newEventId(),
    type: 'metrics.logged',
    data: { iteration: 0, metrics: { loss: 1 } },
  } as ClientEvent;
  const own = await ctx.client.appendEvents(id, [metrics, noSteps]).catch((e: unknown) => e);
  expect(own).toBeInstanceOf(CreditlabApiError);
  const refusal = own as CreditlabApiError;
  expect(refusal.body).toMatchObject({ line: 2, path: 'data.groups[0].trajectories[0].steps' });
  const named = (event: ClientEvent) =>
    `the refused line is event ${event.id} (number 2 in the order given)`;
  const serverWords = `400 INVALID_EVENT: ${String(refusal.body.message)}`;
  // Not sent as columns: the server's message and which event it is, nothing about columns.
  expect(refusal.message).toBe(`${serverWords}; ${named(noSteps)}`);
  expect(refusal.message).not.toMatch(/columns/);

  const older = await standIn(refusal.status, refusal.body);
  try {
    const client = older.client;
    const batch = syntheticBatchJson({ groups: 1, groupSize: 2, maxSteps: 3 }, 1);
    const columnar = rolloutEvents(0, batch, 100, { columnar: true });
    expect('columns' in columnar[0]!.data).toBe(true);
    const e = await client.appendEvents(id, [metrics, ...columnar]).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CreditlabApiError);
    const advised = e as CreditlabApiError;
    // The server's answer is kept whole; the advice follows its message.
    expect([advised.status, advised.body]).toEqual([refusal.status, refusal.body]);
    expect(advised.advice).toMatch(/^the event on this line sends its steps as columns/);
    expect(advised.message).toMatch(
      /^400 INVALID_EVENT: line 2: data\.groups\[0\]\.trajectories\[0\]\.steps: required array is missing; the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: update the server, or send steps as objects .*CREDITLAB_COLUMNAR_STEPS=0/,
    );
    // The same answer to a request whose line 2 holds objects gets no advice.
    const rows = rolloutEvents(0, batch, 100, { columnar: false });
    const plain = await client.appendEvents(id, [metrics, ...rows]).catch((x: unknown) => x);
    expect((plain as CreditlabApiError).message).toBe(`${serverWords}; ${named(rows[0]!)}`);
    expect((plain as CreditlabApiError).advice).toBe(named(rows[0]!));
  } finally {
    await older.close();
  }

  // A server from 2026-12-01 to 12-04 reads columns but not the extra column: it refuses that as an
  // unknown column, as this one refuses a column it does not know.
  const unknown = columnarEvent();
  unknown.data.columns.extras = unknown.data.columns.extra;
  delete unknown.data.columns.extra;
  const own2 = (await ctx.client
    .appendEvents(id, [metrics, unknown])
    .catch((x: unknown) => x)) as CreditlabApiError;
  expect(own2.body).toMatchObject({ path: 'data.columns.extras' });
  const olderRefusal = {
    ...own2.body,
    path: 'data.columns.extra',
    message: String(own2.body.message).replace('data.columns.extras', 'data.columns.extra'),
  };
  const beforeExtra = await standIn(400, olderRefusal);
  try {
    const client = beforeExtra.client;
    const e = (await client
      .appendEvents(id, [metrics, columnarEvent()])
      .catch((x: unknown) => x)) as CreditlabApiError;
    expect(e.body).toEqual(olderRefusal);
    expect(e.advice).toMatch(
      /^the event on this line sends its steps' fields beyond rollout-batch\/v1 in the extra column, which servers before 2026-12-05 do not read: update the server, or send steps as objects .*CREDITLAB_COLUMNAR_STEPS=0.*; the refused line is event /,
    );
    // Only where the refused line has that column.
    const withoutExtra = columnarEvent();
    delete withoutExtra.data.columns.extra;
    const plain = (await client
      .appendEvents(id, [metrics, withoutExtra])
      .catch((x: unknown) => x)) as CreditlabApiError;
    expect(plain.advice).toBe(
      `the refused line is event ${withoutExtra.id} (number 2 in the order given)`,
    );
  } finally {
    await beforeExtra.close();
  }

  // This server's own refusals of columnar events keep their words: one with a `steps` path.
  const mixed = columnarEvent();
  (mixed.data as unknown as { groups: { trajectories: object[] }[] }).groups[0]!.trajectories[0] = {
    id: 'a',
    stepCount: 10,
    steps: [],
  };
  const current = await ctx.client.appendEvents(id, [mixed]).catch((x: unknown) => x);
  expect((current as CreditlabApiError).body).toMatchObject({
    path: 'data.groups[0].trajectories[0].steps',
    reason: 'unknown field',
  });
  expect((current as CreditlabApiError).message).not.toMatch(/servers before/);
});
