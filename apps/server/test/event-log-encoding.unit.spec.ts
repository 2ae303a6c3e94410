import { rolloutEvents } from '@creditlab/client';
import { eventBodyHash, validateEvent, type ValidEvent } from '@creditlab/events';
import { seededRandom } from '@creditlab/random';
import { decodeStepsBody, wireEvent } from '../src/rollouts/event-body';
import { bodyOf, eventDigest, sameEvent } from '../src/rollouts/event-digest';

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
    body: bodyOf(event) as Buffer,
  };
}

test('a step-bearing event put back together from its compact body validates to the same event', () => {
  const rand = seededRandom(7);
  const event = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a10',
    type: 'rollouts.appended',
    data: {
      iteration: 3,
      groups: [0, 1].map((g) => ({
        id: `g${g}`,
        trajectories: [0, 1, 2].map((t) => ({
          id: `g${g}/t${t}`,
          ...(t === 1 ? { outcome: 'success' } : {}),
          steps: Array.from({ length: 5 + t }, (_, i) => randomStep(rand, i)),
        })),
      })),
    },
  });
  const again = validated(wireEvent(stored(event)));
  expect(eventBodyHash(again.type, again.data)).toEqual(eventBodyHash(event.type, event.data));
  expect(again.data).toEqual(event.data);
});

test('steps sent as columns come back from the log as the same steps as sent one object each', () => {
  const rand = seededRandom(11);
  const groups = [0, 1].map((g) => ({
    id: `g${g}`,
    trajectories: [0, 1, 2].map((t) => ({
      id: `g${g}/t${t}`,
      ...(t === 1 ? { outcome: 'success' } : {}),
      // Fields beyond rollout-batch/v1 go in the row form, so none here.
      steps: Array.from({ length: 4 + t }, (_, i) => {
        const { toolCall: _extra, ...step } = randomStep(rand, i);
        return step;
      }),
    })),
  }));
  const [rows] = rolloutEvents(2, { groups });
  const [columns] = rolloutEvents(2, { groups }, 2000, { columnar: true });
  expect(columns!.data).toHaveProperty('columns');
  const fromLog = validated(wireEvent(stored(validated(columns))));
  expect(fromLog.data).toEqual(validated(rows).data);
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
    const now = eventDigest(e, bodyOf(e));
    expect(sameEvent(eventBodyHash(e.type, e.data), e, now)).toBe(true);
    const changed = event([{ state: 's', action: 'a', reward: 2 }]);
    expect(sameEvent(eventBodyHash(changed.type, changed.data), e, now)).toBe(false);
  });
});
