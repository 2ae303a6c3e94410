import {
  columnarBatchFromJson,
  ColumnarBatchBuilder,
  OUTCOME,
  resolveOutcome,
  type Outcome,
  type RolloutBatch,
} from '../src';
import { A, B, C, KEY_BATCH } from './support/key-fixture';

/**
 * What the builder derives from the steps it is given: outcomes, and what a trajectory's end
 * may bootstrap from (docs/estimators.md §1.2–1.3).
 */

function outcomesOf(trajectories: [Outcome | undefined, number[]][]): number[] {
  const builder = new ColumnarBatchBuilder(16);
  builder.beginGroup('g');
  trajectories.forEach(([outcome, rewards], i) => {
    builder.beginTrajectory(`t${i}`, outcome);
    for (const reward of rewards) builder.addStep({ state: 's', action: 'a', reward });
  });
  return Array.from(builder.build().outcome);
}

describe('resolveOutcome', () => {
  test('a given outcome wins over the return', () => {
    expect(resolveOutcome('failure', 5)).toBe('failure');
    expect(resolveOutcome('success', -1)).toBe('success');
    expect(resolveOutcome('truncated', 1)).toBe('truncated');
  });

  test('without one, success exactly when the return is greater than 0', () => {
    expect(resolveOutcome(undefined, 1e-300)).toBe('success');
    expect(resolveOutcome(undefined, 0)).toBe('failure');
    expect(resolveOutcome(undefined, -0.5)).toBe('failure');
  });

  test('the builder resolves outcomes with it, from the undiscounted return', () => {
    expect(
      outcomesOf([
        [undefined, [0, 0.5, -0.25]],
        [undefined, [1, -1]],
        [undefined, [-1]],
        ['truncated', [2]],
        ['failure', [3]],
      ]),
    ).toEqual([
      OUTCOME.success,
      OUTCOME.failure,
      OUTCOME.failure,
      OUTCOME.truncated,
      OUTCOME.failure,
    ]);
  });
});

describe('bootstrap columns', () => {
  const batch = columnarBatchFromJson(KEY_BATCH);

  test("only a truncated end has something to bootstrap from: its nextState's id and its nextValue", () => {
    // States by first appearance: A = 0, B = 1, C = 2, B′ = 3. Only τ4 is truncated (nextState C).
    expect(Array.from(batch.bootstrapStateId)).toEqual([-1, -1, -1, 2]);
    expect(Array.from(batch.bootstrapValue)).toEqual([NaN, NaN, NaN, 0.08]);
  });

  test('nextState and nextValue of a success or failure are ignored', () => {
    const b = structuredClone(KEY_BATCH);
    Object.assign(b.groups[0]!.trajectories[0]!.steps[2]!, { nextState: A, nextValue: 5 });
    Object.assign(b.groups[0]!.trajectories[1]!.steps[2]!, { nextState: B, nextValue: 6 });
    const built = columnarBatchFromJson(b);
    expect(Array.from(built.bootstrapStateId)).toEqual(Array.from(batch.bootstrapStateId));
    expect(Array.from(built.bootstrapValue)).toEqual(Array.from(batch.bootstrapValue));
  });

  test('a truncated end bootstraps only from a state of its own group, and only if given', () => {
    const other: RolloutBatch = structuredClone(KEY_BATCH);
    const t4 = other.groups[0]!.trajectories[3]!;
    other.groups.push({
      id: 'other',
      trajectories: [
        {
          id: 'other/t1',
          outcome: 'truncated',
          steps: [{ state: 'X', action: 'a', reward: 0, nextValue: 0.5 }],
        },
      ],
    });
    t4.steps[1]!.nextState = 'a room no step of this group was in';
    delete t4.steps[1]!.nextValue;
    other.groups[1]!.trajectories[0]!.steps[0]!.nextState = C; // a state of the first group only
    const built = columnarBatchFromJson(other);
    expect(Array.from(built.bootstrapStateId)).toEqual([-1, -1, -1, -1, -1]);
    expect(Array.from(built.bootstrapValue)).toEqual([NaN, NaN, NaN, NaN, 0.5]);
  });
});
