import { rolloutEvents } from '@creditlab/client';
import type { RolloutBatch } from '@creditlab/estimators';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { prepareEvent } from '../apps/server/src/rollouts/append-session';
import { BODY_LINES } from '../apps/server/src/rollouts/event-origin';
import type { BodyLine } from '../apps/server/src/rollouts/ndjson-source';
import { parseLine } from '../apps/server/src/rollouts/ndjson-source';
import {
  checkEvent,
  withoutWireColumns,
  type PreparedEvent,
} from '../apps/server/src/rollouts/prepare-event';
import {
  PIECES_AHEAD_IN_THREAD,
  PrepareThread,
  preparedInThread,
} from '../apps/server/src/rollouts/prepare-thread';
import { CONFORMANCE_DIR } from './support/conformance-dir';

/**
 * The preparing thread (parsing and checking large ingest bodies off the request's thread) gives
 * what the request's own thread gives, line for line, refusals included, in order, holding only a
 * few pieces of a body at once.
 */
const batch = (
  JSON.parse(readFileSync(path.join(CONFORMANCE_DIR, 'spec/spec-s1-c1.json'), 'utf8')) as {
    batch: RolloutBatch;
  }
).batch;

/** Every kind of line: steps as objects and as columns (with embeddings), other events, refusals. */
const texts: (string | null)[] = [
  ...rolloutEvents(0, batch, 7, { columnar: false }),
  ...rolloutEvents(1, batch, 2000, { columnar: true }),
  {
    id: '6f1c1a8e-0000-4000-8000-000000000001',
    type: 'metrics.logged',
    data: { iteration: 0, metrics: { loss: 0.5 } },
  },
  { id: '6f1c1a8e-0000-4000-8000-000000000002', type: 'no.such.type', data: {} },
  {
    id: '6f1c1a8e-0000-4000-8000-000000000003',
    type: 'metrics.logged',
    data: { iteration: -1, metrics: {} },
  },
].map((e) => JSON.stringify(e));
const lines: BodyLine[] = texts.map((text, i) => ({ position: i + 1, text }));

let thread: PrepareThread;
beforeAll(() => {
  thread = new PrepareThread();
});
afterAll(() => thread.close());

test('each line prepared on the thread is what this thread prepares: event, body, digest, or the refusal', async () => {
  const there = await thread.prepare(lines, 'client');
  const here = lines.map(({ position, text }) =>
    checkEvent(position, JSON.parse(text as string), 'client'),
  );
  expect(there).toHaveLength(lines.length);
  there.forEach((line, i) => {
    const want = here[i]!;
    if ('reason' in want) return expect(line).toEqual({ position: i + 1, ...want });
    // The columns as sent stay on the thread, which made the body of them; the decoded ones cross.
    expect(line).toEqual(withoutWireColumns(want));
    // Buffers again, as the log's writer takes them (they cross between threads as plain bytes)
    expect(Buffer.isBuffer((line as typeof want).hash)).toBe(true);
    if (want.body) expect(Buffer.isBuffer((line as typeof want).body)).toBe(true);
  });
  expect(here.filter((p) => 'reason' in p)).toHaveLength(2);
  const columnar = there.filter(
    (p): p is PreparedEvent => 'event' in p && 'columns' in p.event.data,
  );
  expect(columnar).not.toHaveLength(0);
  for (const p of columnar) {
    expect(p.event.data).not.toHaveProperty('columns.wire');
    expect(p.event.data).toHaveProperty('columns.reward');
  }
});

test('a body prepared on the thread gives its events in order, each refusal as this thread words it', async () => {
  const odd: BodyLine[] = [
    ...lines,
    { position: lines.length + 2, text: '{"id": "x",, }' },
    { position: lines.length + 3, text: null },
  ];
  async function* pieces() {
    for (let i = 0; i < odd.length; i += 3) yield odd.slice(i, i + 3);
  }
  const seen: string[] = [];
  const want: string[] = [];
  for (const { position, text } of odd) {
    try {
      want.push(
        prepareEvent({ position, value: parseLine(position, text) }, 'client', BODY_LINES).event.id,
      );
    } catch (e) {
      want.push((e as Error).message);
    }
  }
  const parsed: unknown[] = [];
  try {
    for await (const prepared of preparedInThread(thread, pieces(), 'client', BODY_LINES)) {
      parsed.push(prepared.value);
      try {
        seen.push(prepared().event.id);
      } catch (e) {
        seen.push((e as Error).message);
      }
    }
  } catch (e) {
    // a line that is not JSON ends the body where it is met, as when it is read here
    seen.push((e as Error).message);
  }
  expect(seen).toEqual(want.slice(0, lines.length + 1));
  expect(seen.at(-1)).toMatch(/^line \d+: not valid JSON/);
  // The first event comes with its value as parsed, which the appender looks up with the run's lock
  // (first-event-lookup.ts); the thread's events come without (they are parsed over there).
  expect(parsed[0]).toEqual(JSON.parse(texts[0] as string));
  expect(parsed.slice(1).every((v) => v === undefined)).toBe(true);
});

test('while the caller holds an event, the thread is sent only a few pieces more of the body', async () => {
  let pulled = 0;
  async function* pieces() {
    for (let i = 0; i < 400; i++) {
      pulled++;
      yield [{ position: i + 1, text: texts[0] as string }];
    }
  }
  const events = preparedInThread(thread, pieces(), 'client', BODY_LINES);
  await events.next(); // held, as while its chunk is written
  for (let before = -1; pulled !== before;) {
    before = pulled;
    await new Promise((r) => setTimeout(r, 100));
  }
  // The bound, and the few pieces the stream stages hold besides (the body's, the first one's).
  expect(pulled).toBeLessThanOrEqual(PIECES_AHEAD_IN_THREAD + 4);
  let rest = 0;
  for await (const _ of events) rest++;
  expect(rest).toBe(399);
});

test('a thread that ends fails the pieces it held; the next piece starts a new thread', async () => {
  const fresh = new PrepareThread();
  try {
    // Ended while it still loads its code: the piece is never answered.
    const held = fresh.prepare(lines, 'client');
    await fresh.close();
    await expect(held).rejects.toThrow(/preparing thread exited/);
    const again = await fresh.prepare(lines.slice(0, 1), 'client');
    expect(again[0]).toMatchObject({ position: 1, event: { type: 'rollouts.appended' } });
  } finally {
    await fresh.close();
  }
});

test('a thread whose code cannot load leaves the lines to this thread, saying so once', async () => {
  const warnings: string[] = [];
  const broken = new PrepareThread({
    entry: path.join(__dirname, 'no-such-prepare-thread-entry.js'),
    warn: (m) => warnings.push(m),
  });
  try {
    const here = lines.map(({ position, text }) =>
      checkEvent(position, JSON.parse(text as string), 'client'),
    );
    // what was sent before the thread failed, and what is sent after
    const first = await broken.prepare(lines, 'client');
    const second = await broken.prepare(lines, 'client');
    for (const got of [first, second])
      got.forEach((line, i) => {
        const want = here[i]!;
        expect(line).toEqual(
          'reason' in want ? { position: i + 1, ...want } : withoutWireColumns(want),
        );
      });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /preparing thread cannot start \(failed: .*no-such-prepare-thread-entry/,
    );
  } finally {
    await broken.close();
  }
});
