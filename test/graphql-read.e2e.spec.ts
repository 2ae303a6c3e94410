import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fixtureBatches } from './support/fixture-batches';
import {
  api,
  gql,
  metric,
  spawnServer,
  startTestServer,
  type ServerProcess,
  ADMIN_KEY,
} from './support/test-server';

/** The read side: filters, cursors, the event stream, batching, and the query limits. */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
const runIds: string[] = [];
beforeAll(async () => {
  server = await startTestServer({ CREDITLAB_GRAPHQL_MAX_COST: '100000' });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const batches = fixtureBatches();
  for (let i = 0; i < 5; i++) {
    const { id } = await client.createRun({
      name: `run ${i}`,
      project: i < 4 ? 'lab-a' : 'lab-b',
      env: i % 2 ? 'sokoban' : 'household',
      method: i < 2 ? 'gigpo' : 'grpo',
      tags: i === 0 ? ['baseline', 'seed-1'] : ['seed-1'],
      seed: i,
    });
    runIds.push(id);
    await client.appendEvents(id, [
      ...rolloutEvents(0, batches[i]![1]),
      {
        id: newEventId(),
        type: 'metrics.logged',
        data: { iteration: 0, metrics: { loss: i, kl: 0.1 } },
      },
      { id: newEventId(), type: 'evaluation.logged', data: { iteration: 0, successRate: 0.25 } },
    ]);
  }
  await client.appendEvents(runIds[0]!, [
    {
      id: newEventId(),
      type: 'run.finished',
      data: { status: 'completed', summary: { best: 0.5 } },
    },
  ]);
});
afterAll(() => server.stop());

type RunsPage = {
  runs: {
    nodes: { id: string; name: string }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
};

test('runs: filters on project, env, method, status and tags', async () => {
  const names = async (filter: object) =>
    (
      await gql<RunsPage>(server, 'query($f: RunFilter) { runs(filter: $f) { nodes { name } } }', {
        f: filter,
      })
    )
      .data!.runs.nodes.map((n) => n.name)
      .sort();
  expect(await names({ project: 'lab-a' })).toEqual(['run 0', 'run 1', 'run 2', 'run 3']);
  expect(await names({ project: 'lab-a', env: 'sokoban' })).toEqual(['run 1', 'run 3']);
  expect(await names({ method: 'gigpo' })).toEqual(['run 0', 'run 1']);
  expect(await names({ status: ['COMPLETED'] })).toEqual(['run 0']);
  expect(await names({ status: ['COMPLETED', 'RUNNING'] })).toHaveLength(5);
  expect(await names({ tags: ['seed-1', 'baseline'] })).toEqual(['run 0']);
  expect(await names({ tags: ['seed-1'] })).toHaveLength(5);
});

test('runs: cursor pagination walks every run once, newest first', async () => {
  const seen: string[] = [];
  let after: string | null = null;
  for (let page = 0; page < 10; page++) {
    const res: { data?: RunsPage } = await gql<RunsPage>(
      server,
      'query($a: String) { runs(first: 2, after: $a) { nodes { id name } pageInfo { hasNextPage endCursor } } }',
      { a: after },
    );
    seen.push(...res.data!.runs.nodes.map((n) => n.id));
    if (!res.data!.runs.pageInfo.hasNextPage) break;
    after = res.data!.runs.pageInfo.endCursor;
  }
  expect(seen).toEqual([...runIds].reverse());
});

test('run: status, summary, iterations with metrics and evaluation', async () => {
  const res = await gql<{ run: Record<string, unknown> }>(
    server,
    'query($id: ID!) { run(id: $id) { status summary seed finishedAt iterations { index groupCount trajectoryCount stepCount metrics evaluationSuccessRate } } }',
    { id: runIds[0] },
  );
  const batch = fixtureBatches()[0]![1];
  expect(res.data!.run).toMatchObject({
    status: 'COMPLETED',
    summary: { best: 0.5 },
    seed: 0,
    iterations: [
      {
        index: 0,
        groupCount: batch.groups.length,
        trajectoryCount: batch.groups.reduce((n, g) => n + g.trajectories.length, 0),
        metrics: { loss: 0, kl: 0.1 },
        evaluationSuccessRate: 0.25,
      },
    ],
  });
  expect(res.data!.run.finishedAt).not.toBeNull();
  expect(
    (await gql(server, '{ run(id: "22222222-2222-4222-8222-222222222222") { id } }')).data,
  ).toEqual({ run: null });
});

test('events: in seq order, after a seq, filtered by type, paginated', async () => {
  const q =
    'query($id: ID!, $after: String, $types: [EventType!], $first: Int) { run(id: $id) { events(after: $after, types: $types, first: $first) { nodes { seq type iteration } pageInfo { hasNextPage endCursor } } } }';
  const all = (
    await gql<{ run: { events: { nodes: { seq: number; type: string }[] } } }>(server, q, {
      id: runIds[0],
    })
  ).data!.run.events.nodes;
  expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
  expect(all[0]!.type).toBe('RUN_CREATED');
  expect(all.at(-1)!.type).toBe('RUN_FINISHED');
  const metrics = (
    await gql<{ run: { events: { nodes: { type: string }[] } } }>(server, q, {
      id: runIds[0],
      types: ['METRICS_LOGGED', 'EVALUATION_LOGGED'],
    })
  ).data!.run.events.nodes;
  expect(metrics.map((e) => e.type)).toEqual(['METRICS_LOGGED', 'EVALUATION_LOGGED']);
  const page = (
    await gql<{
      run: {
        events: { nodes: { seq: number }[]; pageInfo: { hasNextPage: boolean; endCursor: string } };
      };
    }>(server, q, { id: runIds[0], first: 2 })
  ).data!.run.events;
  expect(page.nodes.map((e) => e.seq)).toEqual([1, 2]);
  expect(page.pageInfo.hasNextPage).toBe(true);
  const next = (
    await gql<{ run: { events: { nodes: { seq: number }[] } } }>(server, q, {
      id: runIds[0],
      after: page.pageInfo.endCursor,
      first: 2,
    })
  ).data!.run.events;
  expect(next.nodes.map((e) => e.seq)).toEqual([3, 4]);
});

test('groups: pages of a given size cover the iteration in canonical order', async () => {
  const q =
    'query($id: ID!, $a: String) { run(id: $id) { groups(iteration: 0, first: 2, after: $a) { nodes { id } pageInfo { hasNextPage endCursor } } } }';
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const res: {
      data?: {
        run: {
          groups: {
            nodes: { id: string }[];
            pageInfo: { hasNextPage: boolean; endCursor: string };
          };
        };
      };
    } = await gql(server, q, { id: runIds[1], a: after });
    ids.push(...res.data!.run.groups.nodes.map((g) => g.id));
    if (!res.data!.run.groups.pageInfo.hasNextPage) break;
    after = res.data!.run.groups.pageInfo.endCursor;
  }
  expect(ids).toEqual(fixtureBatches()[1]![1].groups.map((g) => g.id));
});

test('a nested query costs a fixed number of SQL statements whatever the page sizes (DataLoader)', async () => {
  const q = `query($runs: Int!, $groups: Int!) { runs(first: $runs, filter: { project: "lab-a" }) { nodes { name
      iterations { index metrics }
      groups(iteration: 0, first: $groups) { nodes { id trajectories { id outcome steps { index state action reward embedding } } } }
      events(first: 5) { nodes { seq } } } } }`;
  const cost = async (runs: number, groups: number) => {
    const before = await metric(server, 'creditlab_db_statements_total');
    const res = await gql<{
      runs: { nodes: { groups: { nodes: { trajectories: { steps: unknown[] }[] }[] } }[] };
    }>(server, q, { runs, groups });
    expect(res.errors).toBeUndefined();
    const steps = res.data!.runs.nodes.flatMap((r) =>
      r.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps)),
    ).length;
    return { statements: (await metric(server, 'creditlab_db_statements_total')) - before, steps };
  };
  const small = await cost(1, 1);
  const large = await cost(4, 20);
  expect(large.steps).toBeGreaterThan(small.steps * 10);
  expect(large.statements).toBe(small.statements);
  // runs (Prisma), iterations (their projection), groups, trajectories, steps with texts, events
  expect(large.statements).toBe(6);
});

test('query limits: cost and page size are refused with clear errors', async () => {
  const costly = await gql(
    server,
    '{ runs(first: 100) { nodes { groups(iteration: 0, first: 100) { nodes { trajectories { steps { index } } } } } } }',
  );
  expect(costly.errors?.[0]).toMatchObject({ extensions: { code: 'QUERY_TOO_COSTLY' } });
  expect(costly.errors?.[0]?.message).toMatch(
    /^query cost \d+ exceeds the limit of 100000; ask for smaller pages$/,
  );
  const page = await gql(server, '{ runs(first: 1000) { nodes { id } } }');
  expect(page.errors?.[0]?.message).toBe('runs: first must be an integer from 1 to 100, got 1000');
  for (const [arg, message] of [
    ['disagreements: -1', 'disagreements: from 0 to 100, got -1'],
    ['examples: 101', 'examples: from 0 to 100, got 101'],
  ]) {
    const listed = await gql(
      server,
      `{ compare(runId: "${runIds[0]}", methods: [{ name: "grpo" }], ${arg}) { stepCount } }`,
    );
    expect(listed.errors?.[0]?.message).toBe(message);
  }
  const cursor = await gql(server, '{ runs(after: "nonsense") { nodes { id } } }');
  expect(cursor.errors?.[0]?.message).toBe('runs: "after" is not a cursor this API issued');
});

test('caller mistakes found before execution are refused with 400, not 500', async () => {
  // Found before execution, where an error is the server's unless it says otherwise: a client
  // that retries server errors (the Python client does) must not retry these for minutes.
  const post = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await api(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, body: (await res.json()) as { errors?: unknown[] } };
  };
  const runsQuery = 'query($f: RunFilter) { runs(filter: $f) { nodes { id } } }';
  const badEnum = await post(runsQuery, { f: { status: ['DONE'] } });
  expect(badEnum.status).toBe(400);
  expect(badEnum.body.errors?.[0]).toMatchObject({
    message: expect.stringContaining('Value "DONE" does not exist in "RunStatus" enum'),
    extensions: { code: 'BAD_USER_INPUT' },
  });
  const badDate = await post(runsQuery, { f: { createdAfter: 'last tuesday' } });
  expect(badDate.status).toBe(400);
  expect(badDate.body.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
  const costly = await post(
    '{ runs(first: 100) { nodes { groups(iteration: 0, first: 100) { nodes { trajectories { steps { index } } } } } } }',
  );
  expect(costly.status).toBe(400);
  expect(costly.body.errors?.[0]).toMatchObject({ extensions: { code: 'QUERY_TOO_COSTLY' } });
  expect(JSON.stringify(costly.body)).not.toContain('"http"');
  // Text PostgreSQL cannot hold, in a literal and in a variable: each named.
  const nulLiteral = await post('{ runs(filter: { nameContains: "a\\u0000" }) { nodes { id } } }');
  expect(nulLiteral.status).toBe(400);
  expect(nulLiteral.body.errors?.[0]).toMatchObject({
    message: 'argument filter.nameContains: must not contain the NUL character (\\u0000)',
    extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
  });
  const nulDefault = await post(
    'query($n: String = "a\\u0000") { runs(filter: { nameContains: $n }) { nodes { id } } }',
  );
  expect(nulDefault.status).toBe(400);
  expect(nulDefault.body.errors?.[0]).toMatchObject({
    message: 'the default of variable $n: must not contain the NUL character (\\u0000)',
  });
  const nulVariable = await post(runsQuery, { f: { tags: ['ok', 'a\u0000'] } });
  expect(nulVariable.status).toBe(400);
  expect(nulVariable.body.errors?.[0]).toMatchObject({
    message: 'variable $f.tags[1]: must not contain the NUL character (\\u0000)',
    extensions: { code: 'BAD_USER_INPUT' },
  });
  // A year the database does not store, as a variable and as a literal.
  const yearZero = await post(runsQuery, { f: { createdAfter: '0000-01-01T00:00:00Z' } });
  expect(yearZero.status).toBe(400);
  expect(JSON.stringify(yearZero.body)).toContain('DateTime must be from year 1 to 9999');
  const yearZeroLiteral = await post(
    '{ runs(filter: { createdBefore: "0000-06-01T00:00:00Z" }) { nodes { id } } }',
  );
  expect(yearZeroLiteral.status).toBe(400);
  expect(JSON.stringify(yearZeroLiteral.body)).toContain('DateTime must be from year 1 to 9999');
  // A subscription belongs on the WebSocket.
  const subscription = await post(
    `subscription { runProgress(runId: "${runIds[0]}") { lastSeq } }`,
  );
  expect(subscription.status).toBe(400);
  expect(subscription.body.errors?.[0]).toMatchObject({
    message: expect.stringContaining('graphql-ws'),
    extensions: { code: 'BAD_REQUEST' },
  });
});

test('query limits: depth counts nested fields, fragments included', async () => {
  const shallow = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    CREDITLAB_GRAPHQL_MAX_DEPTH: '6',
  });
  try {
    const six = await gql(
      shallow,
      '{ runs { nodes { groups(iteration: 0) { nodes { trajectories { id } } } } } }',
    );
    expect(six.errors).toBeUndefined();
    const seven = await gql(
      shallow,
      'fragment T on Trajectory { steps { index } } { runs { nodes { groups(iteration: 0) { nodes { trajectories { ...T } } } } } }',
    );
    expect(seven.errors?.[0]).toMatchObject({
      message: 'query depth 7 exceeds the limit of 6',
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
  } finally {
    await shallow.stop();
  }
});

test('query limits: lists without a page size, JSON values and long strings are counted as they resolve', async () => {
  // One trajectory of 1,500 steps: the cost estimate prices `steps` at 50, whatever its length.
  const { id } = await client.createRun({
    name: 'long trajectory',
    project: 'lab-c',
    env: 'sokoban',
    method: 'grpo',
  });
  const steps = Array.from({ length: 1500 }, (_, i) => ({
    state: `s${i % 7}`,
    action: 'a',
    reward: 0,
  }));
  await client.appendEvents(
    id,
    rolloutEvents(0, { groups: [{ id: 'g', trajectories: [{ id: 't', steps }] }] }),
  );
  const limited = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    CREDITLAB_GRAPHQL_MAX_COST: '2000',
  });
  try {
    const post = async (query: string) => {
      const res = await api(`${limited.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables: { id } }),
      });
      return {
        status: res.status,
        body: (await res.json()) as { data?: unknown; errors?: unknown[] },
      };
    };
    const query = (aliases: number) =>
      `query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 1) { nodes { trajectories {
        ${Array.from({ length: aliases }, (_, a) => `s${a}: steps { index }`).join(' ')} } } } } }`;
    const once = await post(query(1));
    expect(once.status).toBe(200);
    expect(JSON.stringify(once.body.data).match(/"index"/g)).toHaveLength(1500);
    // Within the estimate (50 steps per alias), twice the limit when resolved: refused whole.
    const twice = await post(query(2));
    expect(twice.status).toBe(400);
    expect(twice.body).toEqual({
      errors: [
        expect.objectContaining({
          message: expect.stringContaining('more than 2000 items in its lists'),
          extensions: expect.objectContaining({ code: 'QUERY_TOO_COSTLY' }),
        }),
      ],
    });
    // An iteration's metrics are JSON, which the estimate cannot price: 2,000 of them are 125
    // items, so one alias is answered and 19 (within the estimate) are refused.
    await client.appendEvents(id, [
      {
        id: newEventId(),
        type: 'metrics.logged',
        data: {
          iteration: 0,
          metrics: Object.fromEntries(Array.from({ length: 2000 }, (_, m) => [`m${m}`, m])),
        },
      },
    ]);
    const metrics = (aliases: number) =>
      `query($id: ID!) { run(id: $id) {
        ${Array.from({ length: aliases }, (_, a) => `i${a}: iterations { metrics }`).join(' ')} } }`;
    expect((await post(metrics(1))).status).toBe(200);
    const many = await post(metrics(19));
    expect(many.status).toBe(400);
    expect(many.body.errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({ code: 'QUERY_TOO_COSTLY' }),
      }),
    ]);
    // Strings weigh by length, since a step's text has no limit of its own: 20 states of 20,000
    // characters are 1,250 numbers (78 items) each, so one alias of them is answered and two,
    // within the estimate, are refused.
    const long = Array.from({ length: 20 }, (_, i) => ({
      state: `${i}:`.padEnd(20_000, 'x'),
      action: 'a',
      reward: 0,
    }));
    await client.appendEvents(
      id,
      rolloutEvents(1, { groups: [{ id: 'long', trajectories: [{ id: 't', steps: long }] }] }),
    );
    const states = (aliases: number) =>
      `query($id: ID!) { run(id: $id) { groups(iteration: 1, first: 1) { nodes { trajectories {
        ${Array.from({ length: aliases }, (_, a) => `s${a}: steps { state }`).join(' ')} } } } } }`;
    const oneAlias = await post(states(1));
    expect(oneAlias.status).toBe(200);
    expect(JSON.stringify(oneAlias.body.data)).toContain(long[19]!.state);
    const twoAliases = await post(states(2));
    expect(twoAliases.status).toBe(400);
    expect(twoAliases.body.errors).toEqual([
      expect.objectContaining({
        message: expect.stringContaining('lists, JSON values and strings'),
        extensions: expect.objectContaining({ code: 'QUERY_TOO_COSTLY' }),
      }),
    ]);
  } finally {
    await limited.stop();
  }
});

test('schema.gql in the repository is the schema the server serves', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-schema-'));
  const file = path.join(dir, 'schema.gql');
  const dev = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    NODE_ENV: 'development',
    CREDITLAB_SCHEMA_FILE: file,
  });
  await dev.stop();
  expect(await readFile(file, 'utf8')).toBe(
    await readFile(path.resolve(__dirname, '../schema.gql'), 'utf8'),
  );
});
