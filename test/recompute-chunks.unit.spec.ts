import { chunkIterations } from '../apps/server/src/jobs/recompute-chunks';

const sizes = new Map([
  [0, 40],
  [1, 50],
  [2, 30],
  [5, 200],
  [6, 10],
  [7, 10],
  [8, 10],
]);
const steps = (i: number) => sizes.get(i) ?? 0;

test('chunks are consecutive, in order, and together hold every iteration once', () => {
  const iterations = [0, 1, 2, 5, 6, 7, 8];
  const chunks = chunkIterations(iterations, steps, { steps: 100, iterations: 10 });
  expect(chunks.flat()).toEqual(iterations);
});

test('a chunk stops before passing the step limit; an iteration over it is a chunk alone', () => {
  const chunks = chunkIterations([0, 1, 2, 5, 6, 7, 8], steps, { steps: 100, iterations: 10 });
  expect(chunks).toEqual([[0, 1], [2], [5], [6, 7, 8]]);
  for (const chunk of chunks.filter((c) => c.length > 1))
    expect(chunk.reduce((n, i) => n + steps(i), 0)).toBeLessThanOrEqual(100);
});

test('a chunk stops at the iteration limit even when its steps are few', () => {
  const chunks = chunkIterations([6, 7, 8], steps, { steps: 1000, iterations: 2 });
  expect(chunks).toEqual([[6, 7], [8]]);
});

test('no iterations, no chunks; iterations of unknown size pack by the iteration limit', () => {
  expect(chunkIterations([], steps, { steps: 100, iterations: 4 })).toEqual([]);
  expect(chunkIterations([10, 11, 12, 13, 14], steps, { steps: 100, iterations: 4 })).toEqual([
    [10, 11, 12, 13],
    [14],
  ]);
});
