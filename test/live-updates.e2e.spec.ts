import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { createClient, type Client } from 'graphql-ws';
import { inspect } from 'node:util';
import WebSocket from 'ws';
import { fixtureBatches } from './support/fixture-batches';
import { sqlQuery } from './support/sql-query';
import {
  ADMIN_KEY,
  gql,
  spawnServer,
  startTestServer,
  type ServerProcess,
} from './support/test-server';

/**
 * `runProgress` over graphql-ws: the key in connection_init, the run's state at once and after every
 * change, from whichever server process made it (PostgreSQL LISTEN/NOTIFY), and nothing for a key
 * that does not see the run.
 */
let server: ServerProcess & { databaseUrl: string };
let other: ServerProcess;
let client: CreditlabClient;
const sockets: Client[] = [];

beforeAll(async () => {
  // No key cache here: every message on a socket looks its key up in the database.
  server = await startTestServer({ CREDITLAB_KEY_CACHE_SECONDS: '0' });
  // A second server process on the same database: a change made there reaches subscribers here.
  other = await spawnServer({
    DATABASE_URL: server.databaseUrl,
    CREDITLAB_WORKER: 'false',
    CREDITLAB_KEY_CACHE_SECONDS: '600',
  });
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
});
afterAll(async () => {
  await Promise.all(sockets.map((s) => s.dispose()));
  await other.stop();
  await server.stop();
});

interface Progress {
  runId: string;
  status: string;
  lastSeq: number;
  lastIteration: number | null;
  jobs: { status: string; done: number; total: number }[];
}

/** A subscription's messages as they come, and a way to wait for one that satisfies a test. */
function follow(runId: string, key: string | null = ADMIN_KEY) {
  const messages: Progress[] = [];
  const errors: unknown[] = [];
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  const socket = createClient({
    url: server.url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: key ? { authorization: `Bearer ${key}` } : {},
    retryAttempts: 0,
    lazy: false,
    // A refused connection is an outcome the tests assert on, not something to log.
    onNonLazyError: (e) => {
      errors.push(e);
      wake();
    },
  });
  sockets.push(socket);
  socket.subscribe<{ runProgress: Progress }>(
    {
      query: `subscription($id: ID!) { runProgress(runId: $id) { runId status lastSeq lastIteration jobs { status done total } } }`,
      variables: { id: runId },
    },
    {
      next: (m) => {
        if (m.data) messages.push(m.data.runProgress);
        if (m.errors) errors.push(...m.errors);
        wake();
      },
      error: (e) => {
        errors.push(e);
        wake();
      },
      complete: wake,
    },
  );
  const until = async (ok: () => boolean, what: string) => {
    for (let i = 0; i < 600 && !ok(); i++)
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    if (!ok()) throw new Error(`never saw ${what}: ${JSON.stringify({ messages, errors })}`);
  };
  return { messages, errors, until };
}

test('the run’s state at once, then after every append, also one made through another server process', async () => {
  const { id } = await client.createRun({ name: 'live', env: 'e', method: 'grpo' });
  const live = follow(id);
  await live.until(() => live.messages.length > 0, 'the first state');
  expect(live.messages[0]).toMatchObject({
    runId: id,
    status: 'RUNNING',
    lastSeq: 1,
    lastIteration: null,
  });

  await client.appendEvents(id, rolloutEvents(0, fixtureBatches()[0]![1]));
  await live.until(() => live.messages.at(-1)!.lastIteration === 0, 'the rollouts');

  const elsewhere = new CreditlabClient({ url: other.url, apiKey: ADMIN_KEY });
  const { lastSeq } = await elsewhere.appendEvents(id, [
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  await live.until(
    () => live.messages.at(-1)!.status === 'COMPLETED',
    'the run finished elsewhere',
  );
  expect(live.messages.at(-1)!.lastSeq).toBe(lastSeq);
  expect(live.errors).toEqual([]);
});

test('a recompute job’s progress arrives as it goes, to its end', async () => {
  const { id } = await client.createRun({ name: 'live job', env: 'e', method: 'grpo' });
  const batches = fixtureBatches();
  for (let i = 0; i < 4; i++) await client.appendEvents(id, rolloutEvents(i, batches[i]![1]));
  await client.appendEvents(id, [
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  const live = follow(id);
  await live.until(() => live.messages.length > 0, 'the first state');
  const job = await gql<{ recompute: { id: string } }>(
    server,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "gated-bepo" }) { id } }',
    { r: id },
  );
  expect(job.errors).toBeUndefined();
  await live.until(
    () => live.messages.at(-1)!.jobs[0]?.status === 'COMPLETED',
    'the job completed',
  );
  expect(live.messages.at(-1)!.jobs[0]).toEqual({ status: 'COMPLETED', done: 4, total: 4 });
});

test('no key, an unknown key, or another project’s key: nothing about the run', async () => {
  const { id } = await client.createRun({
    name: 'private',
    project: 'lab-x',
    env: 'e',
    method: 'grpo',
  });
  await gql(server, 'mutation { createProject(name: "lab-y") { name } }');
  const key = await gql<{ createApiKey: { key: string } }>(
    server,
    'mutation { createApiKey(input: { project: "lab-y", role: read }) { key } }',
  );
  for (const k of [null, 'cl_00000000_not-a-key']) {
    const refused = follow(id, k);
    await refused.until(() => refused.errors.length > 0, 'the refusal');
    expect(refused.messages).toEqual([]);
  }
  const stranger = follow(id, key.data!.createApiKey.key);
  await stranger.until(() => stranger.errors.length > 0, 'NOT_FOUND');
  expect(stranger.messages).toEqual([]);
  expect(JSON.stringify(stranger.errors)).toContain('NOT_FOUND');
  expect(JSON.stringify(stranger.errors)).toContain(`run \\"${id}\\" not found`);
});

/**
 * One socket (opened at once, not on first use) and what an operation sent on it comes to: its
 * first message, its errors, or 'complete'.
 */
function socketOutcomes(key: string = ADMIN_KEY) {
  const connected = { count: 0 };
  const socket = createClient({
    on: { connected: () => connected.count++ },
    lazy: false, // one socket for every operation, unless the server closes it
    onNonLazyError: () => undefined, // a close (4500) shows as a second connection
    url: server.url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 0,
  });
  sockets.push(socket);
  const outcome = (query: string, variables?: Record<string, unknown>) =>
    new Promise<unknown>((resolve) => {
      const stop = socket.subscribe(
        { query, variables },
        {
          next: (m) => {
            stop();
            resolve(m);
          },
          error: resolve,
          complete: () => resolve('complete'),
        },
      );
    });
  return { outcome, connected };
}
/** Waits until a socket of socketOutcomes has its connection acknowledged. */
async function untilConnected(connected: { count: number }): Promise<void> {
  for (let i = 0; i < 300 && connected.count === 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  expect(connected.count).toBe(1);
}

/** The message of an operation's refusal (a list of errors); anything else fails, shown whole. */
const messageOf = (refused: unknown) => {
  if (!Array.isArray(refused)) throw new Error(`not a refusal: ${inspect(refused, { depth: 1 })}`);
  return (refused as { message: string }[])[0]?.message;
};

test('a subscription that does not parse gets an error naming the mistake; the socket stays open', async () => {
  const { outcome, connected } = socketOutcomes();
  // An error message for the operation, not the socket closed as the server's own failure (4500).
  expect(messageOf(await outcome('subscription {'))).toMatch(/^Syntax Error: Expected Name/);
  const { id } = await client.createRun({ name: 'after a mistake', env: 'e', method: 'grpo' });
  const fine = await outcome(`subscription { runProgress(runId: "${id}") { runId } }`);
  expect(fine).toMatchObject({ data: { runProgress: { runId: id } } });
  expect(connected.count).toBe(1); // the second subscription used the same socket
});

test('the socket is no way around HTTP: queries and mutations refused, HTTP’s document limits and text checks on subscriptions', async () => {
  const { outcome, connected } = socketOutcomes();
  const overHttp =
    /^a (query|mutation) is not served on the WebSocket, .*send it over HTTP \(POST \/graphql\)$/;
  expect(messageOf(await outcome('{ viewer { role } }'))).toMatch(overHttp);
  expect(
    messageOf(await outcome('mutation { createProject(name: "by-socket") { name } }')),
  ).toMatch(overHttp);
  const projects = await gql<{ projects: { name: string }[] }>(server, '{ projects { name } }');
  expect(projects.data!.projects.map((p) => p.name)).not.toContain('by-socket');

  // Fields expanded past the limit by fragments that spread the one before twice (HTTP's 10,000).
  let fragments = 'fragment F0 on RunProgress { runId lastSeq }\n';
  for (let i = 1; i < 16; i++)
    fragments += `fragment F${i} on RunProgress { ...F${i - 1} ...F${i - 1} }\n`;
  const { id } = await client.createRun({ name: 'socket limits', env: 'e', method: 'grpo' });
  expect(
    messageOf(
      await outcome(`subscription { runProgress(runId: "${id}") { ...F15 } }\n${fragments}`),
    ),
  ).toBe('query expands to 65537 fields (fragments spread in place), more than the limit of 10000');
  expect(
    messageOf(await outcome('subscription { runProgress(runId: "a\\u0000b") { runId } }')),
  ).toBe('argument runId: must not contain the NUL character (\\u0000)');
  expect(
    messageOf(
      await outcome('subscription($id: ID!) { runProgress(runId: $id) { runId } }', {
        id: 'a\u0000b',
      }),
    ),
  ).toBe('variable $id: must not contain the NUL character (\\u0000)');
  // Each refusal was for its operation alone: the socket still serves.
  const fine = await outcome(`subscription { runProgress(runId: "${id}") { runId } }`);
  expect(fine).toMatchObject({ data: { runProgress: { runId: id } } });
  expect(connected.count).toBe(1);
});

test('each subscription counts against its key’s rate limit, as an HTTP request does', async () => {
  await gql(server, 'mutation { createProject(name: "lab-rate") { name } }');
  const created = await gql<{ createApiKey: { key: string } }>(
    server,
    'mutation { createApiKey(input: { project: "lab-rate", role: read, rateLimitPerMinute: 3 }) { key } }',
  );
  expect(created.errors).toBeUndefined();
  const key = created.data!.createApiKey.key;
  // The connection is the key's first request, two HTTP requests its second and third: the
  // subscription is its fourth, over the limit.
  const { outcome, connected } = socketOutcomes(key);
  await untilConnected(connected);
  for (let i = 0; i < 2; i++)
    expect((await gql(server, '{ viewer { role } }', {}, key)).errors).toBeUndefined();
  const limited = await outcome(
    'subscription { runProgress(runId: "0b7e6c1e-0000-4000-8000-000000000000") { runId } }',
  );
  expect(messageOf(limited)).toMatch(
    /^key cl_\w+_… is over its limit of 3 requests per minute; retry in \d+ s$/,
  );
  expect(limited).toMatchObject([{ extensions: { code: 'RATE_LIMITED' } }]);
});

test('a key revoked while its socket is open stops working there: its next message is a refusal, and so is a subscription on a socket it opened before', async () => {
  await gql(server, 'mutation { createProject(name: "lab-revoke") { name } }');
  const created = await gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
    server,
    'mutation { createApiKey(input: { project: "lab-revoke", role: read }) { key apiKey { id } } }',
  );
  expect(created.errors).toBeUndefined();
  const { id } = await client.createRun({
    name: 'revoked',
    project: 'lab-revoke',
    env: 'e',
    method: 'grpo',
  });
  const live = follow(id, created.data!.createApiKey.key);
  await live.until(() => live.messages.length > 0, 'the first state');
  // A second socket of the key, open before the revocation, with nothing asked on it yet.
  const idle = socketOutcomes(created.data!.createApiKey.key);
  await untilConnected(idle.connected);
  const revoked = await gql(server, 'mutation($id: ID!) { revokeApiKey(id: $id) { id } }', {
    id: created.data!.createApiKey.apiKey.id,
  });
  expect(revoked.errors).toBeUndefined();
  const { lastSeq } = await client.appendEvents(id, rolloutEvents(0, fixtureBatches()[0]![1]));
  await live.until(() => live.errors.length > 0, 'the refusal');
  expect(JSON.stringify(live.errors)).toContain('revoked since this socket connected');
  expect(live.messages.map((m) => m.lastSeq)).not.toContain(lastSeq);
  expect(
    messageOf(await idle.outcome(`subscription { runProgress(runId: "${id}") { runId } }`)),
  ).toBe('API key not recognised: revoked since this socket connected');
});

test('a key that cannot be looked up for a moment (the database failing) keeps its socket: its messages go on', async () => {
  const { id } = await client.createRun({ name: 'lookup fails', env: 'e', method: 'grpo' });
  // Appends go through the other process, whose key cache has the admin key by then.
  const viaOther = new CreditlabClient({ url: other.url, apiKey: ADMIN_KEY });
  await viaOther.appendEvents(id, [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 0, metrics: { loss: 1 } } },
  ]);
  const live = follow(id);
  await live.until(() => live.messages.length > 0, 'the first state');
  // Every lookup of a key fails now, as when PostgreSQL is unreachable for a moment.
  await sqlQuery(server.databaseUrl, 'ALTER TABLE api_keys RENAME TO api_keys_away');
  try {
    const { lastSeq } = await viaOther.appendEvents(id, rolloutEvents(0, fixtureBatches()[0]![1]));
    await live.until(
      () => live.errors.length > 0 || live.messages.some((m) => m.lastSeq === lastSeq),
      'the state after the append',
    );
    // Valid at its last check: the message goes, with no refusal and no closed socket.
    expect(live.errors).toEqual([]);
    expect(live.messages.at(-1)!.lastSeq).toBe(lastSeq);
  } finally {
    await sqlQuery(server.databaseUrl, 'ALTER TABLE api_keys_away RENAME TO api_keys');
  }
});
