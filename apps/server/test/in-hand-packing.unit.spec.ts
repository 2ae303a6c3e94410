import { InHandPacking } from '../src/advantages/in-hand-packing';
import type { TrajectoryShape } from '../src/advantages/trajectory-shape';
import { StepSliceRows } from '../src/rollouts/step-slice-rows';
import { TextDictionary } from '../src/rollouts/text-dictionary';
import { uuidBytes } from '../src/rollouts/binary-copy-rows';

/**
 * Packing in hand never fails an append: an iteration whose kept rows do not fit the shape it is
 * given is left out with a warning (the background pass packs it from what was stored), and the
 * others are still packed. (That the rows it packs equal the background pass's, byte for byte, is
 * test/iteration-packing-policy.e2e.spec.ts.)
 */
const RUN = '00000000-0000-4000-8000-000000000001';

function keptRows(packing: InHandPacking): void {
  // Texts only get ids here: the dictionary touches the database only when saving, which this does not.
  const texts = new TextDictionary(undefined as never, RUN);
  const rows = new StepSliceRows(uuidBytes(RUN), texts, packing.onRow);
  const steps = [
    { state: 's0', action: 'a', reward: 0 },
    { state: 's1', action: 'b', reward: 1 },
  ];
  for (const iteration of [0, 1]) {
    packing.watch(iteration);
    rows.objects({ iteration, groupOrd: 0, ord: 0 }, 0, 1 + iteration, steps);
  }
}

const shape = (length: number): TrajectoryShape[] => [
  {
    groupId: 'g',
    trajectoryId: 't',
    groupOrd: 0,
    trajOrd: 0,
    outcome: 'success',
    length,
    offset: 0,
  },
];

/** Iterations 0 and 1 kept (two steps each), packed against shapes of these lengths, at seq 10 and 11. */
async function packAgainst(lengths: [number, number]) {
  const warnings: string[] = [];
  const packing = new InHandPacking((m) => warnings.push(m));
  keptRows(packing);
  const shapes = new Map(lengths.map((n, i) => [i, shape(n)]));
  return { packed: await packing.pack(shapes, (i) => 10 + i), warnings };
}

test('rows that fit their shape are packed at the position given', async () => {
  const { packed, warnings } = await packAgainst([2, 2]);
  expect(packed.map((p) => [p.iteration, p.inputsSeq, p.columns.reward.length])).toEqual([
    [0, 10, 16],
    [1, 11, 16],
  ]);
  expect(warnings).toEqual([]);
});

test('an iteration whose rows do not fit its shape is left out with a warning; the others are packed', async () => {
  const { packed, warnings } = await packAgainst([3, 2]); // iteration 0: three steps expected, two kept
  expect(packed.map((p) => p.iteration)).toEqual([1]);
  expect(warnings).toEqual([
    'not packing iteration 0 in hand: iteration read 2 steps where its trajectories count 3',
  ]);
});
