import { rolloutEvents } from '@creditlab/client';
import { validateEvent, type ValidEvent } from '@creditlab/events';
import { seededRandom } from '@creditlab/random';
import { stepsAsColumns } from '../src/rollouts/steps-as-columns';

function validated(value: unknown): ValidEvent {
  const result = validateEvent(value, 'client');
  if (!result.ok) throw new Error(`${result.issue.path}: ${result.issue.message}`);
  return result.event;
}

/** Steps with each optional field on some and not others, fields beyond v1, and repeated texts. */
function batch(seed: number) {
  const rand = seededRandom(seed);
  const step = (i: number) => {
    const s: Record<string, unknown> = {
      state: `room ${Math.floor(rand() * 3)}`,
      action: rand() < 0.5 ? 'go' : 'look',
      reward: rand() * 2 - 1,
    };
    if (rand() < 0.6) s.nll = rand();
    if (rand() < 0.5) s.value = rand() - 0.5;
    if (rand() < 0.5) s.nextValue = rand();
    if (rand() < 0.5) s.nextState = `room ${Math.floor(rand() * 5)}`;
    if (rand() < 0.4) s.embedding = [rand(), rand()];
    if (rand() < 0.3) s.tokenLogprobs = Array.from({ length: 1 + (i % 3) }, () => -rand());
    if (rand() < 0.3) s.tool = { b: i, a: [1, 'x'] };
    return s;
  };
  return {
    groups: [0, 1].map((g) => ({
      id: `g${g}`,
      trajectories: [0, 1, 2].map((t) => ({
        id: `g${g}/t${t}`,
        ...(t === 2 ? { outcome: 'failure' } : {}),
        steps: Array.from({ length: t * 3 }, (_, i) => step(i)),
      })),
    })),
  };
}

test('steps sent as objects come out as the columns the client would have sent of them', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const rollouts = batch(seed);
    const [asObjects] = rolloutEvents(0, rollouts as never, 2000, { columnar: false });
    const [asColumns] = rolloutEvents(0, rollouts as never, 2000, { columnar: true });
    const mine = stepsAsColumns(validated(asObjects));
    const theirs = validated({ ...asColumns, id: asObjects!.id });
    if (!('columns' in mine.data) || !('columns' in theirs.data)) throw new Error('not columns');
    const { wire: _wire, ...expected } = theirs.data.columns;
    const { sentAsSteps, ...got } = mine.data.columns;
    expect(sentAsSteps).toBe(true);
    expect(mine.data.groups).toEqual(theirs.data.groups);
    // Texts may be numbered in another order: compare each step's texts, then the rest as is.
    const text = (c: typeof got, column: Int32Array | undefined) =>
      column && Array.from(column, (k) => (k < 0 ? null : c.texts[k]));
    for (const name of ['state', 'action', 'nextState'] as const) {
      expect(text(got, got[name])).toEqual(text(expected, expected[name]));
      delete got[name];
      delete expected[name];
    }
    expect(new Set(got.texts)).toEqual(new Set(expected.texts));
    expect(got.texts).toHaveLength(expected.texts.length);
    const { texts: _a, ...gotRest } = got;
    const { texts: _b, ...expectedRest } = expected;
    expect(gotRest).toEqual(expectedRest);
  }
});

test('other events, and rollouts already as columns, are left as they are', () => {
  const finished = validated({
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a12',
    type: 'trajectory.finished',
    data: { iteration: 0, groupId: 'g', trajectoryId: 't', outcome: 'success' },
  });
  expect(stepsAsColumns(finished)).toBe(finished);
  const [columnar] = rolloutEvents(0, batch(9) as never, 2000, { columnar: true });
  const event = validated(columnar);
  expect(stepsAsColumns(event)).toBe(event);
});
