import { stepColumns } from '../src';

/**
 * The client's columnar wire form, byte for byte as JSON: the example of docs/events.md ("Columnar
 * steps") and one with the remaining columns, written out by hand (numbers as numpy's `<f8`,
 * vectors as `<f4`). The Python client sends the same form; the server stores it as sent.
 */

const KITCHEN = 'Kitchen. A fridge and a counter are here.';
const FRIDGE = 'Kitchen. The fridge is open; an apple is inside.';

test("the documented example's steps give the documented columns", () => {
  const columnar = stepColumns([
    {
      id: 'kitchen-42',
      trajectories: [
        {
          id: 'kitchen-42/a',
          outcome: 'success',
          steps: [
            { state: KITCHEN, action: 'open fridge', reward: 0, nll: 0.51 },
            { state: FRIDGE, action: 'take apple', reward: 1, nll: 0.44 },
          ],
        },
        {
          id: 'kitchen-42/b',
          steps: [
            {
              state: KITCHEN,
              action: 'look at counter',
              reward: 0,
              embedding: [0.28, 0.82, -0.12],
            },
          ],
        },
      ],
    },
  ]);
  // docs/events.md, "Columnar steps": the example event's groups and columns.
  const documented =
    '{"groups":[{"id":"kitchen-42","trajectories":[{"id":"kitchen-42/a","outcome":"success","stepCount":2},{"id":"kitchen-42/b","stepCount":1}]}],"columns":{"texts":["Kitchen. A fridge and a counter are here.","Kitchen. The fridge is open; an apple is inside.","open fridge","take apple","look at counter"],"state":[0,1,0],"action":[2,3,4],"reward":"AAAAAAAAAAAAAAAAAADwPwAAAAAAAAAA","nll":"UrgehetR4D8pXI/C9SjcPwAAAAAAAPh/","embedding":[null,null,"KVyPPoXrUT+PwvW9"]}}';
  expect(JSON.stringify(columnar)).toBe(documented);
});

test('value, nextValue, next states (−1 for none), token log-probs given as numbers, base64 or Float32Array', () => {
  const columnar = stepColumns([
    {
      id: 'g',
      trajectories: [
        { id: 'a', steps: [] },
        {
          id: 'b',
          steps: [
            { state: 's0', action: 'x', reward: -0, value: 0.125, tokenLogprobs: [-0.5] },
            { state: 's1', action: 'x', reward: 1, nextState: 's2', nextValue: 2 },
            { state: 's1', action: 'y', reward: 1, tokenLogprobs: 'AAAAvw==' },
            { state: 's0', action: 'y', reward: 1, tokenLogprobs: new Float32Array([0.25, -1]) },
          ],
        },
      ],
    },
  ]);
  expect(JSON.stringify(columnar?.columns)).toBe(
    JSON.stringify({
      texts: ['s0', 's1', 'x', 'y', 's2'],
      state: [0, 1, 1, 0],
      action: [2, 2, 3, 3],
      reward: 'AAAAAAAAAIAAAAAAAADwPwAAAAAAAPA/AAAAAAAA8D8=', // -0, 1, 1, 1
      value: 'AAAAAAAAwD8AAAAAAAD4fwAAAAAAAPh/AAAAAAAA+H8=', // 0.125, NaN, NaN, NaN
      nextValue: 'AAAAAAAA+H8AAAAAAAAAQAAAAAAAAPh/AAAAAAAA+H8=', // NaN, 2, NaN, NaN
      nextState: [-1, 4, -1, -1],
      tokenLogprobs: ['AAAAvw==', null, 'AAAAvw==', 'AACAPgAAgL8='],
    }),
  );
  expect(columnar?.groups[0]?.trajectories.map((t) => t.stepCount)).toEqual([0, 4]);
});

test('fields beyond rollout-batch/v1 go in the extra column, null for a step without any', () => {
  const plain = { state: 's', action: 'a', reward: 0 };
  const steps = [plain, { ...plain, toolCall: { name: 'search' }, taskSeed: 7 }];
  const columnar = stepColumns([{ id: 'g', trajectories: [{ id: 't', steps }] }]);
  expect(columnar?.columns.extra).toEqual([null, { toolCall: { name: 'search' }, taskSeed: 7 }]);
  // No column when no step has such a field (one whose value is undefined is none, as in JSON).
  const without = stepColumns([
    { id: 'g', trajectories: [{ id: 't', steps: [plain, { ...plain, note: undefined }] }] },
  ]);
  expect(without && 'extra' in without.columns).toBe(false);
});
