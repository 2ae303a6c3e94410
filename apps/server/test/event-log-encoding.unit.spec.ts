import { rolloutEvents } from '@creditlab/client';
import { eventBodyHash, validateEvent, type StepPayload, type ValidEvent } from '@creditlab/events';
import { seededRandom } from '@creditlab/random';
import {
  decodeStepsBody,
  encodeStepsBody,
  encodeStepsBodyBothWays,
  wireEvent,
} from '../src/rollouts/event-body';
import { bodyOf, eventDigest, logBodiesOf, sameEvent } from '../src/rollouts/event-digest';
import { checkEvent } from '../src/rollouts/prepare-event';

/** Steps with every optional field present on some and absent on others, and fields beyond v1. */
function randomStep(rand: () => number, i: number): Record<string, unknown> {
  const step: Record<string, unknown> = {
    state: `room ${Math.floor(rand() * 4)}\twith a tab`,
    action: rand() < 0.5 ? 'go north' : 'look',
    reward: i % 5 === 0 ? -0 : rand() * 2 - 1,
  };
  if (rand() < 0.7) step.nll = rand() * 3;
  if (rand() < 0.5) step.value = rand() - 0.5;
  if (rand() < 0.4) step.embedding = Array.from({ length: 3 }, () => rand());
  if (rand() < 0.3) step.tokenLogprobs = Array.from({ length: 1 + (i % 3) }, () => -rand());
  if (rand() < 0.5) step.nextState = `room ${Math.floor(rand() * 4)}`;
  if (rand() < 0.5) step.nextValue = rand();
  if (rand() < 0.3) step.toolCall = { name: 'search', args: [i, 'x'] };
  return step;
}

/** Two groups of three trajectories (the second with an outcome), of `length(t)` steps made by `step`. */
function randomGroups(length: (t: number) => number, step: (i: number) => Record<string, unknown>) {
  return [0, 1].map((g) => ({
    id: `g${g}`,
    trajectories: [0, 1, 2].map((t) => ({
      id: `g${g}/t${t}`,
      ...(t === 1 ? { outcome: 'success' } : {}),
      steps: Array.from({ length: length(t) }, (_, i) => step(i)),
    })),
  }));
}

function validated(value: unknown): ValidEvent {
  const result = validateEvent(value, 'server');
  if (!result.ok) throw new Error(`${result.issue.path}: ${result.issue.message}`);
  return result.event;
}

/** What the log stores for an event: the data naming its slices, and the body. */
function stored(event: ValidEvent) {
  const data = JSON.parse(JSON.stringify(event.data)) as Record<string, unknown>;
  const groups = (data.groups as { trajectories: { steps?: unknown }[] }[]) ?? [];
  for (const g of groups) for (const t of g.trajectories) delete t.steps;
  return {
    id: event.id,
    type: event.type,
    data,
    body: logBodiesOf(event).stored as Buffer,
  };
}

test('a step-bearing event put back together from its compact body validates to the same event', () => {
  const rand = seededRandom(7);
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a10',
    type: 'rollouts.appended',
    data: {
      iteration: 3,
      groups: randomGroups(
        (t) => 5 + t,
        (i) => randomStep(rand, i),
      ),
    },
  });
  const again = validated(wireEvent(stored(event)));
  expect(eventBodyHash(again.type, again.data)).toEqual(eventBodyHash(event.type, event.data));
  expect(again.data).toEqual(event.data);
});

test('steps sent as columns come back from the log as the same steps as sent one object each', () => {
  const rand = seededRandom(11);
  const groups = randomGroups(
    (t) => 4 + t,
    (i) => randomStep(rand, i),
  );
  const [rows] = rolloutEvents(2, { groups }, 2000, { columnar: false });
  const [columns] = rolloutEvents(2, { groups }, 2000, { columnar: true });
  expect(columns!.data).toHaveProperty('columns');
  const fromLog = validated(wireEvent(stored(validated(columns))));
  expect(fromLog.data).toEqual(validated(rows).data);
  // Fields beyond v1 are in the body as canonical JSON, whatever order their keys were sent in.
  const body = logBodiesOf(validated(columns)).stored as Buffer;
  const text = body.toString();
  expect(text).toMatch(/,"extra":\[.*\]\}$/);
  expect(text).toContain('{"toolCall":{"args":[');
  expect(text).not.toContain('\\"toolCall');
  const reordered = structuredClone(columns!);
  const extra = (reordered.data as { columns: { extra: (Record<string, unknown> | null)[] } })
    .columns.extra;
  extra.forEach((e, i) => {
    if (e)
      extra[i] = { toolCall: { args: (e.toolCall as { args: unknown }).args, name: 'search' } };
  });
  expect(logBodiesOf(validated(reordered)).stored).toEqual(body);
  // An extra column with no step's fields is none: the same body (and digest) as without it.
  const [plain] = rolloutEvents(
    2,
    {
      groups: randomGroups(
        (t) => 4 + t,
        (i) => ({ ...randomStep(rand, i), toolCall: undefined }),
      ),
    },
    2000,
  );
  const columnsOf = (e: unknown) =>
    (e as { data: { columns: Record<string, unknown> } }).data.columns;
  expect(columnsOf(plain)).not.toHaveProperty('extra');
  const empty = structuredClone(plain!);
  const n = (columnsOf(empty).state as unknown[]).length;
  columnsOf(empty).extra = Array.from({ length: n }, (_, i) => (i % 2 ? null : {}));
  expect(logBodiesOf(validated(empty)).stored).toEqual(logBodiesOf(validated(plain)).stored);
});

test('columns whose every step has an embedding of one size: the log keeps the vectors as bytes, and gives back the same steps', () => {
  const rand = seededRandom(13);
  const groups = randomGroups(
    (t) => 2 + t,
    (i) => ({ ...randomStep(rand, i), embedding: Array.from({ length: 5 }, () => rand() - 0.5) }),
  );
  const [rows] = rolloutEvents(1, { groups }, 2000, { columnar: false });
  const columns = validated(rolloutEvents(1, { groups }, 2000, { columnar: true })[0]);
  const canonical = bodyOf(columns) as Buffer;
  const body = logBodiesOf(columns).stored as Buffer;
  expect(body.subarray(0, 7).toString()).toBe('{"v":4,');
  // 18 vectors of 20 bytes end the body; as base64 in the canonical body they took 28 bytes each, quoted.
  expect(canonical.length - body.length).toBe(
    ',"embedding":[]'.length + 18 * 30 + 17 - (1 + 18 * 20),
  );
  const fromLog = validated(wireEvent({ ...stored(columns), body }));
  expect(fromLog.data).toEqual(validated(rows).data);
  // What ingest makes of it: this body stored, and the digest of the canonical one (a retry of the
  // event stored before version 4 existed is still the same event).
  const checked = checkEvent(
    1,
    rolloutEvents(1, { groups }, 2000, { columnar: true })[0],
    'server',
  );
  expect(checked).toMatchObject({ body, hash: eventDigest(columns, canonical) });
  expect(decodeStepsBody(body)).toEqual(decodeStepsBody(canonical));
});

test('step objects whose every step has an embedding of one size: stored apart as bytes, given back as the same event', () => {
  const rand = seededRandom(17);
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a12',
    type: 'rollouts.appended',
    data: {
      iteration: 1,
      groups: randomGroups(
        (t) => t * 2,
        (i) => ({ ...randomStep(rand, i), embedding: Array.from({ length: 3 }, () => rand()) }),
      ),
    },
  });
  const body = stored(event).body;
  expect(body.subarray(0, 7).toString()).toBe('{"v":5,');
  expect(body.length).toBeLessThan((bodyOf(event) as Buffer).length);
  const again = validated(wireEvent(stored(event)));
  expect(again.data).toEqual(event.data);
  expect(eventDigest(again, bodyOf(again))).toEqual(eventDigest(event, bodyOf(event)));
});

test('the compact body is several times smaller than the steps as sent when texts recur', () => {
  const steps = Array.from({ length: 200 }, (_, i) => ({
    state: `You are in the kitchen. ${'There is a table here. '.repeat(8)} (${i % 10})`,
    action: `take item ${i % 4}`,
    reward: i / 7,
    nll: i / 3,
    value: i / 11,
  }));
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a11',
    type: 'steps.appended',
    data: { iteration: 0, groupId: 'g', trajectoryId: 't', firstStepIndex: 0, steps },
  });
  const body = bodyOf(event) as Buffer;
  expect(body.length * 3).toBeLessThan(Buffer.byteLength(JSON.stringify(steps)));
  expect(decodeStepsBody(body)[0]).toEqual(steps);
});

test('bodies written before the compact form (version 1: step objects) are still read', () => {
  const v1 = [[{ state: 's', action: 'a', reward: 1, embedding: 'AACAPw==' }], []];
  expect(decodeStepsBody(Buffer.from(JSON.stringify(v1)))).toEqual(v1);
  expect(decodeStepsBody(null)).toEqual([]);
});

describe('eventDigest', () => {
  const event = (steps: object[]) =>
    validated({
      id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a12',
      type: 'steps.appended',
      data: { iteration: 1, groupId: 'g', trajectoryId: 't', firstStepIndex: 0, steps },
    });
  const digest = (e: ValidEvent) => eventDigest(e, bodyOf(e)).toString('hex');

  test('the same content in another key order (extras included) and vectors as numbers or base64 agree', () => {
    const a = event([
      { state: 's', action: 'a', reward: 1, embedding: [0.5, 2], tool: { x: 1, y: 2 } },
    ]);
    const b = event([
      { tool: { y: 2, x: 1 }, embedding: 'AAAAPwAAAEA=', reward: 1, action: 'a', state: 's' },
    ]);
    expect(digest(a)).toBe(digest(b));
  });

  test('any change of content changes it: a reward, a text, an extra field, the iteration', () => {
    const base = { state: 's', action: 'a', reward: 1 };
    const d = digest(event([base]));
    expect(digest(event([{ ...base, reward: 1.5 }]))).not.toBe(d);
    expect(digest(event([{ ...base, state: 't' }]))).not.toBe(d);
    expect(digest(event([{ ...base, note: 1 }]))).not.toBe(d);
    const other = validated({
      id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a12',
      type: 'steps.appended',
      data: { iteration: 2, groupId: 'g', trajectoryId: 't', firstStepIndex: 0, steps: [base] },
    });
    expect(digest(other)).not.toBe(d);
  });

  test('a hash stored before the compact body (eventBodyHash) still identifies the same event', () => {
    const e = event([{ state: 's', action: 'a', reward: 1 }]);
    const now = { event: e, hash: eventDigest(e, bodyOf(e)), body: bodyOf(e) };
    expect(sameEvent(eventBodyHash(e.type, e.data), now)).toBe(true);
    const changed = event([{ state: 's', action: 'a', reward: 2 }]);
    expect(sameEvent(eventBodyHash(changed.type, changed.data), now)).toBe(false);
  });

  test('… also for rollouts sent as objects and held as columns: compared as the objects sent', () => {
    const sent = (reward: number, rand = seededRandom(23)) => ({
      id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a13',
      type: 'rollouts.appended',
      data: {
        iteration: 4,
        groups: randomGroups(
          (t) => 2 + t,
          (i) => ({ ...randomStep(rand, i), reward: i === 0 ? reward : 0.25 }),
        ),
      },
    });
    const prepared = checkEvent(1, sent(1), 'client');
    if (!('hash' in prepared)) throw new Error(prepared.reason);
    expect('columns' in prepared.event.data && prepared.event.data.columns.sentAsSteps).toBe(true);
    const asObjects = validated(sent(1));
    expect(sameEvent(eventBodyHash(asObjects.type, asObjects.data), prepared)).toBe(true);
    const other = validated(sent(2));
    expect(sameEvent(eventBodyHash(other.type, other.data), prepared)).toBe(false);
  });
});

describe('rollouts sent as objects, held as columns', () => {
  const sent = (seed: number, everyStepEmbedded: boolean) => {
    const rand = seededRandom(seed);
    return validated({
      id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a14',
      type: 'rollouts.appended',
      data: {
        iteration: seed,
        groups: randomGroups(
          (t) => (t === 0 ? seed % 3 : 1 + ((seed * (t + 1)) % 7)), // empty trajectories too
          (i) => {
            const step = randomStep(rand, i);
            if (rand() < 0.2) step.state = `état ${i % 2} 🧭`; // texts beyond ASCII, shared
            if (everyStepEmbedded) step.embedding = [rand(), -0, rand() * 1e30];
            return step;
          },
        ),
      },
    });
  };

  test('their bodies are byte for byte those of the objects (every stored digest still matches)', () => {
    for (let seed = 0; seed < 40; seed++)
      for (const everyStepEmbedded of [false, true]) {
        const event = sent(seed, everyStepEmbedded);
        const { canonical, stored, held } = logBodiesOf(event);
        expect('columns' in held.data).toBe(true);
        const slices = (
          event.data as { groups: { trajectories: { steps: StepPayload[] }[] }[] }
        ).groups.flatMap((g) => g.trajectories.map((t) => t.steps));
        expect(canonical).toEqual(encodeStepsBody(slices));
        const embedded = everyStepEmbedded && slices.some((s) => s.length > 0);
        expect(stored).toEqual(embedded ? encodeStepsBodyBothWays(slices).apart : canonical);
      }
  });
});
