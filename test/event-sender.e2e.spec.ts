import { CreditlabApiError, CreditlabClient, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/** The TypeScript client's background sender against a real server: order, joining, limits, refusals. */
let server: ServerProcess;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const SHAPE = { groups: 4, groupSize: 4, maxSteps: 12, statesPerGroup: 6 };

/** Iteration i's rollout events (seeded, so the same i gives the same steps; fresh event ids). */
const iteration = (i: number): ClientEvent[] =>
  rolloutEvents(i, syntheticBatchJson(SHAPE, 500 + i), 2000);

/** The events of a request body as the server received them: one per line. */
const linesOf = (body: unknown): string[] => String(body).split('\n').filter(Boolean);

/** A client whose requests reach the real server and are recorded; with `gate`, answers wait for it. */
function recordingClient(gate?: { open: Promise<void> }) {
  const bodies: string[] = [];
  const client = new CreditlabClient({
    url: server.url,
    apiKey: ADMIN_KEY,
    retries: 0,
    fetch: async (input, init) => {
      if (String(input).endsWith('/events'))
        bodies.push(Buffer.from(init?.body as Uint8Array).toString());
      const res = await fetch(input, init);
      if (gate && String(input).endsWith('/events')) await gate.open;
      return res;
    },
  });
  return { client, bodies };
}

async function newRun(client: CreditlabClient, name: string): Promise<string> {
  return (await client.createRun({ name, env: 'synthetic', method: 'gigpo' })).id;
}

/** The events the run's senders stored (not the run's own first event), in seq order. */
async function storedEvents(runId: string): Promise<{ id: string; iteration: number | null }[]> {
  const res = await gql<{
    run: {
      events: { nodes: { id: string; seq: number; type: string; iteration: number | null }[] };
    };
  }>(server, `{ run(id: "${runId}") { events(first: 1000) { nodes { id seq type iteration } } } }`);
  const nodes = res.data!.run.events.nodes;
  expect(nodes.map((n) => n.seq)).toEqual(nodes.map((_, k) => k + 1)); // gap-free
  expect(nodes[0]?.type).toBe('RUN_CREATED');
  return nodes.slice(1).map(({ id, iteration }) => ({ id, iteration }));
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

test('iterations logged while a request is out go together in the next one, every event once and in order', async () => {
  const { client, bodies } = recordingClient();
  const runId = await newRun(client, 'sender-joins');
  const sender = client.sender(runId);
  const logged = Array.from({ length: 10 }, (_, i) => iteration(i));
  await sender.log(logged[0] as ClientEvent[]);
  await nextTurn(); // the sender's turn: iteration 0 goes out alone
  expect(bodies).toHaveLength(1);
  for (const events of logged.slice(1)) await sender.log(events); // while 0's request is out
  const stats = await sender.close();

  const all = logged.flat();
  expect(bodies.map((b) => linesOf(b).length)).toEqual([
    (logged[0] as ClientEvent[]).length,
    all.length - (logged[0] as ClientEvent[]).length,
  ]);
  expect(stats).toMatchObject({
    logged: all.length,
    events: all.length,
    accepted: all.length,
    duplicates: 0,
    requests: 2,
    lastSeq: all.length + 1, // after the run's own first event
  });
  expect(stats.bytes).toBe(bodies.reduce((n, b) => n + Buffer.byteLength(b), 0));
  expect((await storedEvents(runId)).map((e) => e.id)).toEqual(all.map((e) => e.id));
  await expect(sender.log(iteration(10))).rejects.toThrow(/closed/);
});

test('no request is larger than maxRequestBytes unless one event alone is', async () => {
  const { client, bodies } = recordingClient();
  const runId = await newRun(client, 'sender-limit');
  const logged = Array.from({ length: 12 }, (_, i) => iteration(i));
  const eventBytes = logged.flat().map((e) => Buffer.byteLength(JSON.stringify(e)) + 1);
  const limit = Math.round(2.5 * Math.max(...eventBytes));
  const sender = client.sender(runId, { maxRequestBytes: limit });
  for (const events of logged) await sender.log(events);
  await sender.flush();

  expect(bodies.length).toBeGreaterThan(1);
  for (const body of bodies) expect(Buffer.byteLength(body)).toBeLessThanOrEqual(limit);
  // Each request is as full as the next event allows: joined greedily, in order.
  const sent = bodies.map(linesOf);
  sent.slice(0, -1).forEach((lines, k) => {
    const next = Buffer.byteLength((sent[k + 1] as string[])[0] as string) + 1;
    expect(Buffer.byteLength(bodies[k] as string) + next).toBeGreaterThan(limit);
  });
  expect(sent.flat().map((l) => (JSON.parse(l) as ClientEvent).id)).toEqual(
    logged.flat().map((e) => e.id),
  );
  expect((await storedEvents(runId)).length).toBe(logged.flat().length);

  // One event larger than the limit goes alone rather than not at all.
  const tiny = client.sender(runId, { maxRequestBytes: 64 });
  await tiny.log(iteration(12));
  expect((await tiny.flush()).requests).toBe(iteration(12).length);
});

test('log waits while more than maxQueueBytes is queued, until the server catches up', async () => {
  let open!: () => void;
  const gate = { open: new Promise<void>((resolve) => (open = resolve)) };
  const { client } = recordingClient(gate);
  const runId = await newRun(client, 'sender-backpressure');
  const first = iteration(0);
  const size = first.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)) + 1, 0);
  const sender = client.sender(runId, { maxRequestBytes: size, maxQueueBytes: size });
  await sender.log(first); // queued: not more than the limit
  await nextTurn(); // iteration 0 is out, its answer held at the gate
  await sender.log(iteration(1)); // fits in the emptied queue
  let returned = false;
  const third = sender.log(iteration(2)).then(() => (returned = true));
  for (let k = 0; k < 20; k++) await nextTurn();
  expect(returned).toBe(false); // two iterations queued, one allowed
  expect(sender.pending).toBe(first.length + iteration(1).length + iteration(2).length);
  open();
  await third;
  expect(returned).toBe(true);
  expect((await sender.close()).events).toBe(sender.stats.logged);
});

test('a refused request stops the sender: flush and log throw the refusal, nothing after it is stored', async () => {
  const { client, bodies } = recordingClient();
  const runId = await newRun(client, 'sender-refused');
  const sender = client.sender(runId);
  const good = iteration(0);
  await sender.log(good);
  await sender.flush();

  // Iteration 1 with steps as objects, its first step's reward a word.
  const bad = rolloutEvents(1, syntheticBatchJson(SHAPE, 501), 2000, { columnar: false });
  const data = bad[0]!.data as { groups: { trajectories: { steps: { reward: unknown }[] }[] }[] };
  data.groups[0]!.trajectories[0]!.steps[0]!.reward = 'high';
  await sender.log(bad);
  await sender.log(iteration(2)); // joins the bad request: refused with it
  const refusal = await sender.flush().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(refusal).toBeInstanceOf(CreditlabApiError);
  expect((refusal as CreditlabApiError).status).toBe(400);
  expect((refusal as CreditlabApiError).body).toMatchObject({ line: 1 });
  expect((refusal as CreditlabApiError).message).toMatch(/reward/);
  await expect(sender.log(iteration(3))).rejects.toBe(refusal);
  await expect(sender.close()).rejects.toBe(refusal);

  expect(bodies).toHaveLength(2);
  const stored = await storedEvents(runId);
  expect(stored.map((e) => e.id)).toEqual(good.map((e) => e.id));
  expect(sender.pending).toBe(bad.length + iteration(2).length); // the refused call logged nothing
});

test('events logged again (same ids) through another sender are counted as duplicates, stored once', async () => {
  const { client } = recordingClient();
  const runId = await newRun(client, 'sender-again');
  const events = iteration(0);
  const first = client.sender(runId);
  await first.log(events);
  await first.close();
  const again = client.sender(runId);
  // As a file of them would be read: bytes, CRLF line ends, a blank line.
  const file = Buffer.from(events.map((e) => JSON.stringify(e)).join('\r\n') + '\r\n\r\n');
  await again.logNdjson(file);
  expect(await again.close()).toMatchObject({
    logged: events.length,
    accepted: 0,
    duplicates: events.length,
  });
  expect(await storedEvents(runId)).toHaveLength(events.length);
});
