import { expect, test } from '@jest/globals';
import { withPositions } from '../src/api/compare-api';
import { pairSides } from '../src/pages/compare/pair-sides';

const methods = [{ method: 'gigpo' }, { method: 'grpo' }, { method: 'gigpo' }];
const answer = (
  pairs: { a: string; b: string; aIndex?: number; bIndex?: number }[],
  against: { method: string; methodIndex?: number }[],
) =>
  withPositions({
    runId: 'r',
    iterations: [0],
    stepCount: 1,
    methods: methods.map((m) => ({ ...m, params: {} })) as never,
    pairs: pairs.map((p) => ({ ...p, pearson: 1, spearman: 1, signAgreement: 1 })) as never,
    againstReference: against.map((r) => ({
      ...r,
      field: 'trueAdvantage',
      steps: 1,
      pearson: 1,
      spearman: 1,
      signAgreement: 1,
    })),
  });

test("a side's position is the server's; a server that gives none is read by its name", () => {
  const given = answer(
    [{ a: 'gigpo#0', b: 'gigpo#2', aIndex: 0, bIndex: 2 }],
    [{ method: 'gigpo#2', methodIndex: 2 }],
  );
  expect([given.pairs[0]!.aIndex, given.pairs[0]!.bIndex]).toEqual([0, 2]);
  // Older servers: gigpo#2 is the third method, a plain name the first of that method.
  const read = answer(
    [
      { a: 'gigpo#0', b: 'gigpo#2' },
      { a: 'grpo', b: 'gigpo#2' },
    ],
    [{ method: 'gigpo#2' }, { method: 'grpo' }],
  );
  expect(read.pairs.map((p) => [p.aIndex, p.bIndex])).toEqual([
    [0, 2],
    [1, 2],
  ]);
  expect(read.againstReference.map((r) => r.methodIndex)).toEqual([2, 1]);
});

test("a pair's sides are the methods and parameters asked at their positions", () => {
  const asked = [{ name: 'gigpo', params: { gamma: 0.5 } }, { name: 'grpo' }, { name: 'gigpo' }];
  // As the server names them: gigpo#0 is no method, and would take a spare colour.
  const named = [{ method: 'gigpo#0' }, { method: 'grpo' }, { method: 'gigpo#2' }];
  const [a, b] = pairSides({ aIndex: 0, bIndex: 2 }, { methods: named as never }, asked);
  expect([a.index, a.method, a.label, b.index, b.method, b.label]).toEqual([
    0,
    'gigpo',
    'gigpo (gamma=0.5)',
    2,
    'gigpo',
    'gigpo',
  ]);
});
