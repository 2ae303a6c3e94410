import {
  ALL_BATCH_INPUTS,
  columnarBatchFromJson,
  OUTCOME_NAMES,
  withInputs,
} from '@creditlab/estimators';
import { syntheticBatchJson } from '../../../libs/estimators/test/support/synthetic-rollouts';
import type { TupleFields } from '../src/advantages/binary-copy';
import { StepColumns } from '../src/advantages/iteration-columns';
import {
  PACKED_COLUMNS,
  PACKED_INPUTS,
  packedServes,
  packIteration,
  unpackIteration,
  unpackShape,
} from '../src/advantages/packed-columns';
import type { TrajectoryShape } from '../src/advantages/trajectory-shape';

/** The batch's shape as the reader would have read it (every trajectory has steps here). */
function shapeOf(b: ReturnType<typeof columnarBatchFromJson>): TrajectoryShape[] {
  const shape: TrajectoryShape[] = [];
  for (let g = 0; g < b.groupCount; g++)
    for (let t = b.groupTrajectoryOffsets[g]!; t < b.groupTrajectoryOffsets[g + 1]!; t++) {
      const offset = b.trajectoryStepOffsets[t]!;
      shape.push({
        groupId: b.groupIds[g]!,
        trajectoryId: b.trajectoryIds[t]!,
        groupOrd: g,
        trajOrd: t - b.groupTrajectoryOffsets[g]!,
        outcome: OUTCOME_NAMES[b.outcome[t]!]!,
        length: b.trajectoryStepOffsets[t + 1]! - offset,
        offset,
      });
    }
  return shape;
}

/** The fields of one binary COPY row: the iteration, then the packed columns. */
function asRow(iteration: number, columns: Buffer[]): TupleFields {
  const head = Buffer.alloc(4);
  head.writeInt32BE(iteration);
  const fields = [head, ...columns];
  const start = new Int32Array(fields.length);
  const length = new Int32Array(fields.length);
  let at = 0;
  fields.forEach((f, i) => {
    start[i] = at;
    length[i] = f.length;
    at += f.length;
  });
  return { buf: Buffer.concat(fields), start, length };
}

const shape = { groups: 3, groupSize: 4, maxSteps: 6, statesPerGroup: 3, embeddingDim: 2 };
const batch = columnarBatchFromJson(syntheticBatchJson(shape, 9));
const textIds = (n: number) => ({
  idsHi: Array.from({ length: n }, (_, i) => i - 7),
  idsLo: Array.from({ length: n }, (_, i) => 1000 * i),
});
const packed = packIteration(4, 17, shapeOf(batch), batch, {
  states: textIds(batch.groupStateOffsets[batch.groupCount]!),
  actions: textIds(batch.groupActionOffsets[batch.groupCount]!),
});
/** All a packed row serves: every input but the embeddings (texts come by their ids). */
const servable = new Set(ALL_BATCH_INPUTS.filter((i) => i !== 'embedding'));
const everything = new StepColumns(servable);

test('a packed iteration unpacks to the batch it was packed from, texts aside, and to its shape', () => {
  const shapeBack = unpackShape(JSON.parse(JSON.stringify(packed.shape)) as typeof packed.shape);
  expect(shapeBack).toEqual(shapeOf(batch));
  const row = asRow(
    4,
    PACKED_COLUMNS.map((c) => packed.columns[c]),
  );
  const back = unpackIteration(row, shapeBack, everything);
  expect(back.build([...batch.stateTexts], [...batch.actionTexts])).toEqual(
    withInputs(batch, servable),
  );
  expect(back.states).toEqual(textIds(batch.groupStateOffsets[batch.groupCount]!));
});

test('only the columns a method reads are unpacked; the rest as withInputs leaves them', () => {
  const inputs = new Set(['state'] as const);
  const row = asRow(
    4,
    PACKED_COLUMNS.map((c) => packed.columns[c]),
  );
  const back = unpackIteration(row, shapeOf(batch), new StepColumns(inputs));
  expect(back.build([], [])).toEqual(withInputs(batch, inputs));
});

test('a column whose length does not fit the shape is refused, naming it', () => {
  const columns = PACKED_COLUMNS.map((c) => packed.columns[c]);
  columns[0] = columns[0]!.subarray(8); // one reward short
  expect(() => unpackIteration(asRow(4, columns), shapeOf(batch), everything)).toThrow(
    `packed column reward holds ${batch.stepCount * 8 - 8} bytes where its iteration needs ${batch.stepCount * 8}`,
  );
});

test('packed rows hold no embeddings: a method that reads them is sent to the step slices', () => {
  expect(batch.embeddingDim).toBe(2); // the batch packed had them
  expect(PACKED_COLUMNS).not.toContain('embedding');
  expect(PACKED_INPUTS.has('embedding')).toBe(false);
  expect(packedServes(new Set(ALL_BATCH_INPUTS))).toBe(false);
  expect(packedServes(servable)).toBe(true);
  const row = asRow(
    4,
    PACKED_COLUMNS.map((c) => packed.columns[c]),
  );
  expect(() =>
    unpackIteration(row, shapeOf(batch), new StepColumns(new Set(['embedding']))),
  ).toThrow('packed rows hold no embeddings');
});
