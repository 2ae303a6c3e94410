import { CreditlabApiError, CreditlabClient, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * The TypeScript client's background sender against a real server: joining, order, limits,
 * back-pressure, outages and refusals.
 */
let server: ServerProcess;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const SHAPE = { groups: 4, groupSize: 4, maxSteps: 12, statesPerGroup: 6 };

/** Iteration i's rollout events (seeded, so the same i gives the same steps; fresh event ids). */
const iteration = (i: number): ClientEvent[] =>
  rolloutEvents(i, syntheticBatchJson(SHAPE, 500 + i), 2000);

/** A metrics.logged event of iteration i. */
const metricsEvent = (i: number): ClientEvent =>
  ({
    id: crypto.randomUUID(),
    type: 'metrics.logged',
    data: { iteration: i, metrics: { loss: 1 / (i + 1) } },
  }) as ClientEvent;

const ndjsonBytes = (events: ClientEvent[]) =>
  events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)) + 1, 0);

/** The events of a request body: one per line. */
const linesOf = (body: string): string[] => body.split('\n').filter(Boolean);

/** Holds the answers of append requests while closed (the requests reach the server meanwhile). */
class Gate {
  private opened = Promise.resolve();
  private release = () => undefined as void;
  close(): void {
    this.opened = new Promise((resolve) => (this.release = resolve));
  }
  open(): void {
    this.release();
  }
  passed(): Promise<void> {
    return this.opened;
  }
}

/**
 * A client whose append requests reach the real server and are recorded, their answers held while
 * `gate` is closed; `unreachable()` says when a request should fail as if the network were down.
 */
function recordingClient(gate = new Gate(), unreachable: () => boolean = () => false) {
  const bodies: string[] = [];
  const aborted: string[] = [];
  const client = new CreditlabClient({
    url: server.url,
    apiKey: ADMIN_KEY,
    retries: 0,
    fetch: async (input, init) => {
      if (!String(input).endsWith('/events')) return fetch(input, init);
      if (unreachable()) throw refused();
      bodies.push(Buffer.from(init?.body as Uint8Array).toString());
      const res = await fetch(input, init);
      // A held answer is given up, as fetch gives up a pending one, when the request is aborted.
      await new Promise<void>((resolve, reject) => {
        const signal = init?.signal;
        signal?.addEventListener('abort', () => {
          aborted.push(bodies.at(-1)!);
          reject(signal.reason);
        });
        void gate.passed().then(resolve);
      });
      return res;
    },
  });
  return { client, bodies, aborted, gate };
}

/** What fetch throws when nothing listens at the address. */
const refused = () =>
  Object.assign(new TypeError('fetch failed'), {
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });

async function newRun(client: CreditlabClient, name: string): Promise<string> {
  return (await client.createRun({ name, env: 'synthetic', method: 'gigpo' })).id;
}

/** The events the run's senders stored (not the run's own first event), in seq order. */
async function storedIds(runId: string): Promise<string[]> {
  const res = await gql<{
    run: { events: { nodes: { id: string; seq: number; type: string }[] } };
  }>(server, `{ run(id: "${runId}") { events(first: 1000) { nodes { id seq type } } } }`);
  const nodes = res.data!.run.events.nodes;
  expect(nodes.map((n) => n.seq)).toEqual(nodes.map((_, k) => k + 1)); // gap-free
  expect(nodes[0]?.type).toBe('RUN_CREATED');
  return nodes.slice(1).map((n) => n.id);
}

const ids = (events: ClientEvent[]) => events.map((e) => e.id);

test('iterations logged while a request is out go together in the next one, every event once and in order', async () => {
  const { client, bodies, gate } = recordingClient();
  const runId = await newRun(client, 'sender-joins');
  const sender = client.sender(runId);
  expect(client.sender(runId)).toBe(sender); // the run's one sender
  const logged = Array.from({ length: 10 }, (_, i) => iteration(i));
  gate.close();
  await sender.log(logged[0]!); // goes out alone: nothing else was queued
  expect(bodies).toHaveLength(1);
  for (const events of logged.slice(1)) await sender.log(events); // while 0's answer is held
  expect(bodies).toHaveLength(1);
  gate.open();
  const stats = await sender.close();

  const all = logged.flat();
  expect(bodies.map((b) => linesOf(b).length)).toEqual([
    logged[0]!.length,
    all.length - logged[0]!.length,
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
  expect(await storedIds(runId)).toEqual(ids(all));
  await expect(sender.log(iteration(10))).rejects.toThrow(/closed/);
  expect(client.sender(runId)).not.toBe(sender); // closed: a new one for the run
});

test('requests progress while the caller computes without yielding, other than awaiting log', async () => {
  const { client, bodies } = recordingClient();
  const runId = await newRun(client, 'sender-busy-caller');
  const sender = client.sender(runId);
  const logged: ClientEvent[][] = [];
  // Training steps that never await, until the server's first answer has been taken in (or 200 steps).
  while (sender.stats.requests === 0 && logged.length < 200) {
    const until = Date.now() + 5;
    while (Date.now() < until);
    logged.push(iteration(logged.length));
    await sender.log(logged.at(-1)!);
  }
  expect(sender.stats.requests).toBeGreaterThanOrEqual(1); // answered before the caller flushed
  expect(bodies.length).toBeGreaterThanOrEqual(1);
  await sender.close();
  expect(await storedIds(runId)).toEqual(ids(logged.flat()));
});

test('requests hold whole log calls up to maxRequestBytes; a larger call or event is split, not refused', async () => {
  const { client, bodies, gate } = recordingClient();
  const runId = await newRun(client, 'sender-limit');
  // Each call: a small event, then an iteration's rollouts (a request split by events alone would
  // take the small one and leave the large one for the next).
  const logged = Array.from({ length: 12 }, (_, i) => [metricsEvent(i), ...iteration(i)]);
  const limit = Math.round(2.5 * Math.max(...logged.map(ndjsonBytes)));
  const sender = client.sender(runId, { maxRequestBytes: limit });
  gate.close();
  await sender.log(iteration(99)); // out alone, answer held, while the twelve queue
  for (const events of logged) await sender.log(events);
  gate.open();
  await sender.flush();

  const joined = bodies.slice(1).map(linesOf);
  expect(joined.length).toBeGreaterThan(1);
  for (const body of bodies) expect(Buffer.byteLength(body)).toBeLessThanOrEqual(limit);
  // Each request holds whole calls, as many as fit: the next would have passed the limit.
  let at = 0;
  for (const lines of joined) {
    let count = 0;
    while (logged.slice(at, at + count).flat().length < lines.length) count++;
    expect(lines).toEqual(
      logged
        .slice(at, at + count)
        .flat()
        .map((e) => JSON.stringify(e)),
    );
    const bytes = ndjsonBytes(logged.slice(at, at + count).flat());
    at += count;
    if (at < logged.length) expect(bytes + ndjsonBytes(logged[at]!)).toBeGreaterThan(limit);
  }
  expect(at).toBe(logged.length);
  const stored = await storedIds(runId);
  expect(stored.slice(-logged.flat().length)).toEqual(ids(logged.flat()));
  await sender.close();

  // One call larger than the limit is split between requests; an event larger than it goes alone.
  const big = [...iteration(20), ...iteration(21), ...iteration(22)];
  const tiny = client.sender(runId, { maxRequestBytes: 64 });
  await tiny.log(big);
  expect(await tiny.close()).toMatchObject({ requests: big.length, accepted: big.length });
});

test('log waits while more than maxQueueBytes is queued, until the server catches up', async () => {
  const { client, gate } = recordingClient();
  const runId = await newRun(client, 'sender-backpressure');
  const [first, second, third] = [iteration(0), iteration(1), iteration(2)];
  const size = Math.max(ndjsonBytes(first), ndjsonBytes(second));
  expect(ndjsonBytes(second) + ndjsonBytes(third)).toBeGreaterThan(size);
  const sender = client.sender(runId, { maxRequestBytes: size, maxQueueBytes: size });
  gate.close();
  await sender.log(first); // out at once, its answer held
  await sender.log(second); // queued: within the limit
  let returned = false;
  const waiting = sender.log(third).then(() => (returned = true));
  for (let k = 0; k < 20; k++) await new Promise((resolve) => setImmediate(resolve));
  expect(returned).toBe(false); // two iterations queued, more than the limit
  expect(sender.pending).toBe(first.length + second.length + third.length);
  gate.open();
  await waiting;
  expect((await sender.close()).events).toBe(first.length + second.length + third.length);
});

test('while the server cannot be reached the events stay queued and go once it is back, in order', async () => {
  let failures = 3;
  const { client } = recordingClient(undefined, () => failures-- > 0);
  const runId = await newRun(client, 'sender-outage');
  const warnings: string[] = [];
  const sender = client.sender(runId, {
    retryIntervalMs: 100,
    onWarning: (m) => warnings.push(m),
  });
  const logged = [iteration(0), iteration(1), iteration(2)];
  for (const events of logged) await sender.log(events);
  await expect(sender.flush(10)).rejects.toThrow(/not stored in time: \d+ of \d+ logged are not/);
  const stats = await sender.flush(); // the sender went on
  expect(stats).toMatchObject({ events: logged.flat().length, retries: 3 });
  expect(warnings).toHaveLength(2);
  expect(warnings[0]).toMatch(/not sent \(TypeError: fetch failed\); they stay queued/);
  expect(warnings[1]).toMatch(/server is back/);
  expect(await storedIds(runId)).toEqual(ids(logged.flat()));
  await sender.close();
});

test('close with a time limit gives up on a server that stays away, and stops trying', async () => {
  let attempts = 0;
  const { client } = recordingClient(undefined, () => ++attempts > 0);
  const runId = await newRun(client, 'sender-gone');
  const sender = client.sender(runId, { retryIntervalMs: 20, onWarning: () => undefined });
  const events = iteration(0);
  await sender.log(events);
  await expect(sender.close(200)).rejects.toThrow(
    new RegExp(`${events.length} of ${events.length} logged are not`),
  );
  const tried = attempts;
  expect(tried).toBeGreaterThan(1); // it kept trying until then
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(attempts).toBe(tried); // and not after
  await expect(sender.log(iteration(1))).rejects.toThrow(/closed/);
  expect(sender.pending).toBe(events.length);
});

test('close with a time limit aborts the request that is out', async () => {
  const { client, bodies, aborted, gate } = recordingClient();
  const runId = await newRun(client, 'sender-aborted');
  const sender = client.sender(runId, { onWarning: () => undefined });
  gate.close(); // the answer never comes back
  await sender.log(iteration(0));
  await expect(sender.close(200)).rejects.toThrow(/not stored in time/);
  expect(aborted).toEqual(bodies); // the one request, aborted
  gate.open();
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(bodies).toHaveLength(1); // not sent again
});

test('a refused request stops the sender: the refusal names the event, nothing after it is sent', async () => {
  const { client, bodies, gate } = recordingClient();
  const runId = await newRun(client, 'sender-refused');
  const sender = client.sender(runId);
  const good = iteration(0);
  await sender.log(good);
  await sender.flush();

  // Iteration 1 with steps as objects, its first step's reward a word.
  const bad = rolloutEvents(1, syntheticBatchJson(SHAPE, 501), 2000, { columnar: false });
  const data = bad[0]!.data as { groups: { trajectories: { steps: { reward: unknown }[] }[] }[] };
  data.groups[0]!.trajectories[0]!.steps[0]!.reward = 'high';
  gate.close();
  await sender.log(bad); // out alone, its answer held
  await sender.log(iteration(2)); // queued behind it
  gate.open();
  const refusal = await sender.flush().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(refusal).toBeInstanceOf(CreditlabApiError);
  expect(refusal).toMatchObject({ status: 400, body: { line: 1 } });
  expect((refusal as Error).message).toMatch(/reward/);
  expect((refusal as Error).message).toContain(
    `the refused line is event ${bad[0]!.id} (number ${good.length + 1} in the order given)`,
  );
  await expect(sender.log(iteration(3))).rejects.toBe(refusal);
  await expect(sender.close()).rejects.toBe(refusal);

  expect(bodies).toHaveLength(2); // iteration 2 was never sent
  expect(await storedIds(runId)).toEqual(ids(good));
  expect(sender.pending).toBe(bad.length + iteration(2).length); // the refused call logged nothing
  expect(client.sender(runId)).not.toBe(sender);

  // appendEvents names it the same way, counting the events of its call.
  const batched = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 2 });
  const call = [...iteration(4), ...iteration(5), ...bad];
  await expect(batched.appendEvents(runId, call)).rejects.toThrow(
    `the refused line is event ${bad[0]!.id} (number 3 in the order given)`,
  );
});

test('NDJSON as bytes: line ends as the server reads them, a byte-order mark, blank lines; sent again, duplicates', async () => {
  const { client, bodies } = recordingClient();
  const runId = await newRun(client, 'sender-ndjson');
  const events = [...iteration(0), ...iteration(1), ...iteration(2)];
  const first = client.sender(runId);
  await first.log(events);
  await first.close();
  const lines = events.map((e) => JSON.stringify(e));
  const file = Buffer.concat([
    Buffer.from([0xef, 0xbb, 0xbf]),
    Buffer.from(`${lines[0]}\r\n \t\r\n${lines[1]}\r\u00a0\n${lines[2]}`),
  ]);
  const again = client.sender(runId);
  await expect(again.log(lines[0] as never)).rejects.toThrow(/logNdjson/); // text is not a list
  await again.logNdjson(file);
  expect(await again.close()).toMatchObject({
    logged: events.length,
    accepted: 0,
    duplicates: events.length,
  });
  expect(linesOf(bodies.at(-1)!)).toEqual(lines); // the blank lines and the mark left out
  expect(await storedIds(runId)).toEqual(ids(events));
});
