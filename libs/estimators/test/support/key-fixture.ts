import type { RolloutBatch } from '../../src';

/** The "get the key" batch of docs/estimators.md §4.1 (G = 4 trajectories, 10 steps). */
export const A = 'You are in room A. Doors lead to B and C.';
export const B = 'You are in room B. A key lies on the table.';
export const B2 = 'You are in room B. A key lies on the floor.';
export const C = 'You are in room C. It is dark.';

export const KEY_BATCH: RolloutBatch = {
  format: 'rollout-batch/v1',
  groups: [
    {
      id: 'key',
      trajectories: [
        {
          id: 'key/t1',
          outcome: 'success',
          steps: [
            { state: A, action: 'go to b', reward: 0, nll: 0.8, embedding: [1, 0, 0], value: 0.3 },
            { state: B, action: 'look', reward: 0, nll: 1.1, embedding: [0, 1, 0.1], value: 0.65 },
            {
              state: B,
              action: 'take key',
              reward: 1,
              nll: 0.4,
              embedding: [0, 1, 0.12],
              value: 0.75,
            },
          ],
        },
        {
          id: 'key/t2',
          outcome: 'failure',
          steps: [
            { state: A, action: 'go to c', reward: 0, nll: 1.2, embedding: [1, 0, 0], value: 0.3 },
            {
              state: C,
              action: 'lok',
              reward: -0.1,
              nll: 2.0,
              embedding: [0.1, 0.1, 1.0],
              value: 0.1,
            },
            {
              state: C,
              action: 'open door',
              reward: 0,
              nll: 0.9,
              embedding: [0.12, 0.1, 1.0],
              value: 0.05,
            },
          ],
        },
        {
          id: 'key/t3',
          outcome: 'failure',
          steps: [
            { state: A, action: 'go to b', reward: 0, nll: 0.7, embedding: [1, 0, 0], value: 0.3 },
            {
              state: B2,
              action: 'drop key',
              reward: 0,
              nll: 1.5,
              embedding: [0, 1, 0.15],
              value: 0.4,
            },
          ],
        },
        {
          id: 'key/t4',
          outcome: 'truncated',
          steps: [
            { state: A, action: 'go to c', reward: 0, nll: 1.0, embedding: [1, 0, 0], value: 0.3 },
            {
              state: C,
              action: 'look',
              reward: 0,
              nll: 0.2,
              embedding: [0.1, 0.1, 1.0],
              value: 0.1,
              nextState: C,
              nextValue: 0.08,
            },
          ],
        },
      ],
    },
  ],
};

/** Per-trajectory values of the golden tables, flattened in canonical step order. */
export const perTrajectory = (values: [number, number, number, number]): number[] =>
  [3, 3, 2, 2].flatMap((len, i) => Array<number>(len).fill(values[i] as number));
