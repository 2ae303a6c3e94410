import { ColumnarBatchBuilder, OUTCOME, resolveOutcome, type Outcome } from '../src';

/** What the builder derives from the steps it is given: outcomes (docs/estimators.md §1.2). */

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
