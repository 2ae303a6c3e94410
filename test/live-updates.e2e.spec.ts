import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { fixtureBatches } from './support/fixture-batches';
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
  server = await startTestServer();
  // A second server process on the same database: a change made there reaches subscribers here.
  other = await spawnServer({ DATABASE_URL: server.databaseUrl, CREDITLAB_WORKER: 'false' });
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

test('a subscription that does not parse gets an error naming the mistake; the socket stays open', async () => {
  let connections = 0;
  const socket = createClient({
    on: { connected: () => connections++ },
    lazy: false, // one socket for both subscriptions, unless the server closes it
    onNonLazyError: () => undefined, // the old close (4500) shows as a second connection below
    url: server.url.replace(/^http/, 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${ADMIN_KEY}` },
    retryAttempts: 0,
  });
  sockets.push(socket);
  const outcome = (query: string) =>
    new Promise<unknown>((resolve) => {
      const stop = socket.subscribe(
        { query },
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
  // An error message for the operation, not the socket closed as the server's own failure (4500).
  const broken = await outcome('subscription {');
  expect(Array.isArray(broken)).toBe(true);
  expect((broken as { message: string }[])[0]?.message).toMatch(/^Syntax Error: Expected Name/);
  const { id } = await client.createRun({ name: 'after a mistake', env: 'e', method: 'grpo' });
  const fine = await outcome(`subscription { runProgress(runId: "${id}") { runId } }`);
  expect(fine).toMatchObject({ data: { runProgress: { runId: id } } });
  expect(connections).toBe(1); // the second subscription used the same socket
});
