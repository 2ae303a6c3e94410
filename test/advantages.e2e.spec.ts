import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import {
  columnarBatchFromJson,
  estimate,
  type AdvantagesDocument,
  type RolloutBatch,
} from '@creditlab/estimators';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFORMANCE_DIR } from './support/conformance-dir';
import { gql, startTestServer, type ServerProcess, ADMIN_KEY, api } from './support/test-server';

/**
 * The online path and Step.advantage: any method, any parameters, on stored
 * rollouts, equal value for value (at float32) to the library on the same batch.
 */
let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
let runId: string;
const fixture = JSON.parse(
  readFileSync(path.join(CONFORMANCE_DIR, 'spec/spec-s1-c1.json'), 'utf8'),
) as { batch: RolloutBatch; expected: AdvantagesDocument[] };

beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (await client.createRun({ name: 'advantages', env: 'fixtures', method: 'gigpo' })).id;
  await client.appendEvents(runId, rolloutEvents(5, fixture.batch, 37));
});
afterAll(() => server.stop());

async function online(
  method: string,
  params: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  accept = 'application/json',
) {
  return api(`${server.url}/v1/runs/${runId}/iterations/5/advantages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({ method, params, ...extra }),
  });
}

/** POST …/advantages of any run and iteration with a JSON body. */
const postAdvantages = (id: string, iteration: number, body: string) =>
  api(`${server.url}/v1/runs/${id}/iterations/${iteration}/advantages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

const cases = fixture.expected.map(
  (e, n) => [`#${n} ${e.method} ${JSON.stringify(e.params)}`, e.method, e.params] as const,
);

test.each(cases)(
  '%s: the stored set equals the library, value for value',
  async (_label, method, params) => {
    const res = await online(method, params);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as AdvantagesDocument & { advantageSetId: string };
    const direct = estimate(columnarBatchFromJson(fixture.batch), method, params);
    const got = doc.groups.flatMap((g) => g.trajectories.flatMap((t) => t.advantages));
    expect(got).toEqual(Array.from(direct.advantages, Math.fround));
    expect(doc.params).toEqual(direct.params);

    const bin = await online(method, params, {}, 'application/octet-stream');
    expect(bin.headers.get('content-type')).toContain('application/octet-stream');
    expect(bin.headers.get('x-creditlab-reused')).toBe('true');
    expect(Array.from(new Float32Array(await bin.arrayBuffer()))).toEqual(got);
  },
);

test('a parameter given at its default is the same set; advantages.used events name the set, once per event id', async () => {
  const a = await online('gigpo', {});
  const b = await online(
    'gigpo',
    { gamma: 0.95, stepWeight: 1 },
    { eventId: '00000000-0000-4000-8000-00000000aaaa' },
  );
  const c = await online(
    'gigpo',
    { gamma: 0.95 },
    { eventId: '00000000-0000-4000-8000-00000000aaaa' },
  );
  expect(b.headers.get('x-creditlab-advantage-set')).toBe(
    a.headers.get('x-creditlab-advantage-set'),
  );
  expect(c.headers.get('x-creditlab-reused')).toBe('true');
  const events = await gql<{
    run: {
      events: {
        nodes: {
          id: string;
          data: { advantageSetId: string; method: string; iteration: number };
        }[];
      };
    };
  }>(
    server,
    'query($id: ID!) { run(id: $id) { events(types: [ADVANTAGES_USED], first: 1000) { nodes { id data } } } }',
    { id: runId },
  );
  const used = events.data!.run.events.nodes;
  expect(used.filter((e) => e.id === '00000000-0000-4000-8000-00000000aaaa')).toHaveLength(1);
  expect(used.at(-1)!.data).toMatchObject({
    method: 'gigpo',
    iteration: 5,
    advantageSetId: a.headers.get('x-creditlab-advantage-set'),
  });
});

test('Step.advantage and Step.diagnostics read the same set', async () => {
  const direct = estimate(columnarBatchFromJson(fixture.batch), 'gaca', { debiased: true });
  const res = await gql<{
    run: {
      groups: {
        nodes: {
          trajectories: { steps: { advantage: number; diagnostics: { lambda: number } }[] }[];
        }[];
      };
    };
  }>(
    server,
    `query($id: ID!) { run(id: $id) { groups(iteration: 5, first: 100) { nodes { trajectories { steps {
       advantage(method: { name: "gaca", params: { debiased: true } })
       diagnostics(method: { name: "gaca", params: { debiased: true } }) } } } } } }`,
    { id: runId },
  );
  expect(res.errors).toBeUndefined();
  const steps = res.data!.run.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  expect(steps.map((s) => s.advantage)).toEqual(Array.from(direct.advantages, Math.fround));
  expect(steps.map((s) => s.diagnostics.lambda)).toEqual(
    Array.from(direct.diagnostics.lambda!, Math.fround),
  );
});

test('the registry is served with parameter schemas', async () => {
  const res = await gql<{
    estimators: {
      name: string;
      requires: string[];
      params: { name: string; default: unknown; allowed: string }[];
    }[];
  }>(server, '{ estimators { name version requires params { name default allowed } } }');
  const bipace = res.data!.estimators.find((e) => e.name === 'bipace')!;
  expect(bipace.requires).toEqual(['embedding']);
  expect(bipace.params.find((p) => p.name === 'clusterEpsilon')).toEqual({
    name: 'clusterEpsilon',
    default: 0.1,
    allowed: 'a number in [0, 2]',
  });
  expect(res.data!.estimators.map((e) => e.name)).toHaveLength(9);
});

describe('errors are clear, with codes', () => {
  test('unknown method, bad parameters: 400 over HTTP, BAD_USER_INPUT in GraphQL', async () => {
    const unknown = await online('gipgo', {});
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({
      error: 'INVALID_INPUT',
      message: expect.stringContaining('unknown method "gipgo"; known methods: reinforce, grpo'),
    });
    // A key __proto__ would vanish when the body is copied, with its value unchecked.
    const proto = await postAdvantages(
      runId,
      5,
      '{"method":"gigpo","params":{"__proto__":{"gamma":"abc"}}}',
    );
    expect(proto.status).toBe(400);
    expect(((await proto.json()) as { message: string }).message).toBe(
      'params.__proto__: key must not be "__proto__" (a JavaScript object cannot hold it as a field)',
    );
    // A misspelt field or query parameter would have answered under the default parameters.
    const misspelt = await postAdvantages(runId, 5, '{"method":"gigpo","param":{"gamma":0.5}}');
    expect(misspelt.status).toBe(400);
    expect(await misspelt.json()).toMatchObject({
      message: 'param: unknown field; the fields here are method, params, eventId, diagnostics',
      path: 'param',
    });
    const misspeltQuery = await api(
      `${server.url}/v1/runs/${runId}/iterations/5/advantages?method=gigpo&parms=${encodeURIComponent('{"gamma":0.5}')}`,
    );
    expect(misspeltQuery.status).toBe(400);
    expect(await misspeltQuery.json()).toMatchObject({
      message:
        'parms: unknown query parameter; the query parameters here are method, params, diagnostics',
      path: 'parms',
    });
    // The cache-buster a browser's or library's "no cache" option adds is taken and ignored.
    const busted = await api(
      `${server.url}/v1/runs/${runId}/iterations/5/advantages?method=gigpo&_=1733190000000`,
    );
    expect(busted.status).toBe(200);
    const twoMisspelt = await postAdvantages(
      runId,
      5,
      '{"method":"gigpo","parms":{},"evenId":"x"}',
    );
    expect(await twoMisspelt.json()).toMatchObject({
      message:
        'parms: unknown fields "parms", "evenId"; the fields here are method, params, eventId, diagnostics',
      path: 'parms',
    });
    const bad = await online('gigpo', { gamma: 2 });
    expect(((await bad.json()) as { message: string }).message).toBe(
      'parameter "gamma" of method "gigpo" must be a number in [0, 1], got 2',
    );
    // Not an object at all (GraphQL's JSON scalar takes anything): was taken as no parameters
    // (5) or as parameter "0" ("x").
    for (const params of ['5', '"x"']) {
      const notAnObject = await gql(
        server,
        `query($id: ID!) { compare(runId: $id, methods: [{ name: "gigpo", params: ${params} }]) { stepCount } }`,
        { id: runId },
      );
      expect(notAnObject.errors?.[0]).toMatchObject({
        message: expect.stringContaining(
          'the parameters of method "gigpo" must be an object of names and values',
        ),
        extensions: { code: 'BAD_USER_INPUT' },
      });
    }
    const g = await gql(
      server,
      'query($id: ID!) { compare(runId: $id, methods: [{ name: "gigpo", params: { stepwieght: 1 } }]) { stepCount } }',
      { id: runId },
    );
    expect(g.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(g.errors?.[0]?.message).toMatch(
      /unknown parameter "stepwieght" for method "gigpo"; valid parameters: gamma, stepWeight/,
    );
  });

  test('a method missing a step field names the run, the iteration and the step', async () => {
    const { id } = await client.createRun({ name: 'no embeddings', env: 'e', method: 'grpo' });
    const batch = structuredClone(fixture.batch);
    delete batch.groups[1]!.trajectories[2]!.steps[3]!.embedding;
    await client.appendEvents(id, rolloutEvents(0, batch));
    const res = await postAdvantages(id, 0, '{"method":"bipace"}');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { message: string };
    expect(body.message).toBe(
      `bipace on run ${id} iteration 0: group "g1", trajectory "g1/t2", step 3 (groups[1].trajectories[2].steps[3]): method "bipace" needs "embedding" on every step; this step has none`,
    );
  });

  test('advantages that overflow are refused with 400 over HTTP and BAD_USER_INPUT in GraphQL', async () => {
    const { id } = await client.createRun({ name: 'huge rewards', env: 'e', method: 'reinforce' });
    const step = { state: 's', action: 'a', reward: 1e308 };
    const batch: RolloutBatch = {
      format: 'rollout-batch/v1',
      groups: [{ id: 'g', trajectories: [{ id: 't', steps: [step, step] }] }],
    };
    await client.appendEvents(id, rolloutEvents(0, batch));
    const res = await postAdvantages(id, 0, '{"method":"reinforce"}');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain(
      'method "reinforce" gives this step a non-finite advantage (Infinity)',
    );
    const g = await gql(
      server,
      'query($id: ID!) { compare(runId: $id, methods: [{ name: "reinforce" }]) { stepCount } }',
      { id },
    );
    expect(g.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
  });

  test('a request that fails leaves no advantage set behind, whichever path it came by', async () => {
    // Steps without NLL, value or embeddings: gaca, ppo-gae and bipace cannot compute on them.
    const { id } = await client.createRun({ name: 'bare steps', env: 'e', method: 'grpo' });
    const bare = structuredClone(fixture.batch);
    for (const g of bare.groups)
      for (const t of g.trajectories)
        for (const st of t.steps) {
          delete st.embedding;
          delete st.nll;
          delete st.tokenLogprobs;
          delete st.value;
        }
    await client.appendEvents(id, rolloutEvents(0, bare));
    const sets = async () =>
      (
        await gql<{ run: { advantageSets: { method: string; iterations: number[] }[] } }>(
          server,
          'query($id: ID!) { run(id: $id) { advantageSets { method iterations } } }',
          { id },
        )
      ).data!.run.advantageSets;
    expect((await postAdvantages(id, 0, '{"method":"gaca"}')).status).toBe(400);
    expect((await postAdvantages(id, 0, '{"method":"bipace"}')).status).toBe(400);
    const read = await api(`${server.url}/v1/runs/${id}/iterations/0/advantages?method=ppo-gae`);
    expect(read.status).toBe(400);
    const compared = await gql(
      server,
      'query($id: ID!) { compare(runId: $id, methods: [{ name: "grpo" }, { name: "gaca" }]) { stepCount } }',
      { id },
    );
    expect(compared.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    const exported = await api(
      `${server.url}/v1/runs/${id}/export?format=csv&methods=${encodeURIComponent('[{"name":"bipace"}]')}`,
    );
    expect(exported.status).toBe(400);
    // grpo computed in the compare before gaca failed: its set is kept, with what it computed.
    expect(await sets()).toEqual([{ method: 'grpo', iterations: [0] }]);
    // A request that succeeds stores its set, as before.
    expect((await postAdvantages(id, 0, '{"method":"gigpo"}')).status).toBe(200);
    expect((await sets()).map((s) => s.method).sort()).toEqual(['gigpo', 'grpo']);
  });

  test('an iteration without rollouts, an unknown run', async () => {
    const empty = await postAdvantages(runId, 9, '{"method":"grpo"}');
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { message: string }).message).toBe(
      `run ${runId} has no rollouts in iteration 9`,
    );
    const res = await api(
      `${server.url}/v1/runs/11111111-1111-4111-8111-111111111111/iterations/0/advantages`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"method":"grpo"}',
      },
    );
    expect(res.status).toBe(404);
  });
});

/** A fresh run holding the fixture batch as iteration 0 (no advantage set yet). */
async function fixtureRun(name: string): Promise<string> {
  const { id } = await client.createRun({ name, env: 'fixtures', method: 'gigpo' });
  await client.appendEvents(id, rolloutEvents(0, fixture.batch));
  return id;
}

test('many requests creating the same set at once all get it (one set, no error)', async () => {
  // Each round on a fresh run, so that every request races to create the set.
  for (let round = 0; round < 5; round++) {
    const id = await fixtureRun(`race ${round}`);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        api(`${server.url}/v1/runs/${id}/iterations/0/advantages?method=gaca`, {
          headers: { accept: 'application/octet-stream' },
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((r) => r.headers.get('x-creditlab-advantage-set'))).size).toBe(1);
  }
});

test('Step.advantage and Step.diagnostics of new sets in one query, on fresh runs, as the web app asks', async () => {
  const direct = estimate(columnarBatchFromJson(fixture.batch), 'gigpo', {});
  for (let round = 0; round < 3; round++) {
    const id = await fixtureRun(`both ${round}`);
    const res = await gql<{
      run: {
        groups: {
          nodes: { trajectories: { steps: { a: number; d: Record<string, unknown> }[] }[] }[];
        };
      };
    }>(
      server,
      `query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 10) { nodes { trajectories { steps {
         a: advantage(method: { name: "gigpo" }) d: diagnostics(method: { name: "gigpo" })
         b: advantage(method: { name: "gaca" }) e: diagnostics(method: { name: "gaca" }) } } } } } }`,
      { id },
    );
    expect(res.errors).toBeUndefined();
    const steps = res.data!.run.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
    expect(steps.map((s) => s.a)).toEqual(Array.from(direct.advantages, Math.fround));
    expect(steps.map((s) => s.d.stepGroupSize)).toEqual(
      Array.from(direct.diagnostics.stepGroupSize!),
    );
  }
});
