import { CreditlabClient } from '@creditlab/client';
import { randomUUID } from 'node:crypto';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/** Run creation under a client-chosen id: a repeated request returns the run, never a second one. */
let server: ServerProcess & { databaseUrl: string };
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const createRun = (body: unknown, key = ADMIN_KEY) =>
  api(
    `${server.url}/v1/runs`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    },
    key,
  );

async function runsNamed(name: string): Promise<{ id: string; events: number }[]> {
  const res = await gql<{
    runs: { nodes: { id: string; name: string; events: { nodes: unknown[] } }[] };
  }>(server, '{ runs(first: 100) { nodes { id name events { nodes { seq } } } } }');
  return res
    .data!.runs.nodes.filter((r) => r.name === name)
    .map((r) => ({ id: r.id, events: r.events.nodes.length }));
}

/**
 * A fetch under which each matching request reaches the server, but the answer to its first
 * sending is lost on the way back.
 */
function losingFirstAnswer(matches: (body: string) => boolean): {
  fetch: typeof fetch;
  calls: () => number;
} {
  let calls = 0;
  const seen = new Set<string>();
  return {
    calls: () => calls,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (typeof init?.body === 'string' && matches(init.body)) {
        calls++;
        if (!seen.has(init.body)) {
          seen.add(init.body);
          await res.arrayBuffer();
          throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
        }
      }
      return res;
    },
  };
}

/** A client on the server whose first answer to each matching request is lost. */
function clientLosing(matches: (body: string) => boolean) {
  const flaky = losingFirstAnswer(matches);
  const client = new CreditlabClient({
    url: server.url,
    apiKey: ADMIN_KEY,
    fetch: flaky.fetch,
    retryDelayMs: 10,
  });
  return { flaky, client };
}

test('POST /v1/runs with an id: 201, then 200 with the same answer for the same body, 409 for another', async () => {
  const id = randomUUID();
  const body = { id, name: 'same id', env: 'e', method: 'grpo', params: { gamma: 0.9 } };
  const first = await createRun(body);
  expect(first.status).toBe(201);
  expect(await first.json()).toEqual({ id });
  // the same run described again, key order and explicit defaults aside
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  for (const again of [body, { ...body, tags: [], config: {} }, reordered]) {
    const res = await createRun(again);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id });
  }
  const other = await createRun({ ...body, params: { gamma: 0.8 } });
  expect(other.status).toBe(409);
  expect(await other.json()).toMatchObject({
    error: 'CONFLICT',
    message: expect.stringContaining(id),
  });
  expect(await runsNamed('same id')).toEqual([{ id, events: 1 }]); // one run, one run.created
});

test('without an id every request makes a new run; a bad id is a 400 naming the field', async () => {
  const body = { name: 'no id', env: 'e', method: 'grpo' };
  const a = await createRun(body);
  const b = await createRun(body);
  expect([a.status, b.status]).toEqual([201, 201]);
  expect(((await a.json()) as { id: string }).id).not.toBe(((await b.json()) as { id: string }).id);
  const bad = await createRun({ ...body, id: 'run-1' });
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({ path: 'id' });
});

test('concurrent requests with one id make one run', async () => {
  const id = randomUUID();
  const answers = await Promise.all(
    Array.from({ length: 6 }, () => createRun({ id, name: 'racing', env: 'e', method: 'grpo' })),
  );
  expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
  expect(await runsNamed('racing')).toEqual([{ id, events: 1 }]);
});

test('an id taken in another project is a conflict, whatever the body', async () => {
  await gql(server, 'mutation { createProject(name: "other") { name } }');
  const key = await gql<{ createApiKey: { key: string } }>(
    server,
    'mutation { createApiKey(input: { project: "other", role: write }) { key } }',
  );
  const id = randomUUID();
  const body = { id, name: 'taken', env: 'e', method: 'grpo' };
  expect((await createRun(body)).status).toBe(201);
  const theirs = await createRun(body, key.data!.createApiKey.key);
  expect(theirs.status).toBe(409);
});

test('GraphQL createRun takes the id too', async () => {
  const id = randomUUID();
  const create = (name: string) =>
    gql<{ createRun: { id: string; name: string } }>(
      server,
      'mutation($i: CreateRunInput!) { createRun(input: $i) { id name } }',
      { i: { id, name, env: 'e', method: 'grpo' } },
    );
  expect((await create('graphql')).data).toEqual({ createRun: { id, name: 'graphql' } });
  expect((await create('graphql')).data).toEqual({ createRun: { id, name: 'graphql' } });
  const other = await create('graphql, renamed');
  expect(other.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  expect(await runsNamed('graphql')).toEqual([{ id, events: 1 }]);
});

test('the client retries a createRun whose answer was lost and gets the one run it created', async () => {
  const { flaky, client } = clientLosing((body) => body.includes('"lost answer"'));
  const { id } = await client.createRun({ name: 'lost answer', env: 'e', method: 'grpo' });
  expect(flaky.calls()).toBe(2);
  expect(await runsNamed('lost answer')).toEqual([{ id, events: 1 }]);
});

test('the client retries GraphQL queries, not mutations unless told they are idempotent', async () => {
  const { flaky, client } = clientLosing((body) => body.includes('lost-'));
  await expect(
    client.graphql('mutation { createProject(name: "lost-mutation") { name } }'),
  ).rejects.toThrow('fetch failed');
  expect(flaky.calls()).toBe(1); // not sent again: it had been carried out
  const projects = await gql<{ projects: { name: string }[] }>(server, '{ projects { name } }');
  expect(projects.data!.projects.map((p) => p.name)).toContain('lost-mutation');

  const query = await client.graphql<{ runs: { nodes: unknown[] } }>(
    'query { runs(filter: { project: "lost-query" }) { nodes { id } } }',
  );
  expect(query.runs.nodes).toEqual([]);
  expect(flaky.calls()).toBe(3); // the mutation, then the query twice

  // told: a query the caller does not want repeated is sent once
  await expect(
    client.graphql('query { projects { name } } # lost-told', {}, { idempotent: false }),
  ).rejects.toThrow('fetch failed');
  expect(flaky.calls()).toBe(4);
});
