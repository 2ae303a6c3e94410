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
 * What the builder derives from the steps it is given: outcomes, and what follows each step
 * (docs/estimators.md §1.2–1.3).
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

describe('successor columns', () => {
  const batch = columnarBatchFromJson(KEY_BATCH);
  const NONE = NaN;

  test('continues is 0 exactly at the last step of each trajectory', () => {
    expect(Array.from(batch.continues)).toEqual([1, 1, 0, 1, 1, 0, 1, 0, 1, 0]);
  });

  test('the successor of a step is the next step; only a truncated end names one of its own', () => {
    // States by first appearance: A = 0, B = 1, C = 2, B′ = 3. Only τ4 is truncated (nextState C).
    expect(Array.from(batch.successorStateId)).toEqual([1, 1, -1, 2, 2, -1, 3, -1, 2, 2]);
    expect(Array.from(batch.successorValue)).toEqual([
      0.65,
      0.75,
      NONE,
      0.1,
      0.05,
      NONE,
      0.4,
      NONE,
      0.1,
      0.08,
    ]);
  });

  test('nextState and nextValue of a success or failure are ignored', () => {
    const b = structuredClone(KEY_BATCH);
    Object.assign(b.groups[0]!.trajectories[0]!.steps[2]!, { nextState: A, nextValue: 5 });
    Object.assign(b.groups[0]!.trajectories[1]!.steps[2]!, { nextState: B, nextValue: 6 });
    const built = columnarBatchFromJson(b);
    expect(Array.from(built.successorStateId)).toEqual(Array.from(batch.successorStateId));
    expect(Array.from(built.successorValue)).toEqual(Array.from(batch.successorValue));
  });

  test('a truncated end bootstraps only from a state of its own group, and only if given', () => {
    const other: RolloutBatch = structuredClone(KEY_BATCH);
    const t4 = other.groups[0]!.trajectories[3]!;
    other.groups.push({
      id: 'other',
      trajectories: [
        { id: 'other/t1', outcome: 'truncated', steps: [{ state: 'X', action: 'a', reward: 0 }] },
      ],
    });
    t4.steps[1]!.nextState = 'a room no step of this group was in';
    delete t4.steps[1]!.nextValue;
    other.groups[1]!.trajectories[0]!.steps[0]!.nextState = C; // a state of the first group only
    const built = columnarBatchFromJson(other);
    expect(built.successorStateId[9]).toBe(-1);
    expect(built.successorValue[9]).toBeNaN();
    expect(built.successorStateId[10]).toBe(-1);
    expect(Array.from(built.continues.subarray(8))).toEqual([1, 0, 0]);
  });
});
