import { typedReads } from '../typed-arrays';
import { OUTCOME, type ColumnarBatch } from './columnar-batch';

const { at, byteAt, intAt } = typedReads;

/** What each trajectory's end may bootstrap from (docs/estimators.md §1.2–1.3). */
export interface BootstrapColumns {
  bootstrapStateId: Int32Array;
  bootstrapValue: Float64Array;
}

/** What the last step of each trajectory gives as its successor, if anything. */
export interface TrajectoryEnds {
  nextStateText: readonly (string | undefined)[];
  /** NaN where absent. */
  nextValue: Float64Array;
}

/**
 * Per trajectory: a truncated one keeps what its last step names as successor, `nextState`
 * (as a state id, when that text is a state of the same group) and `nextValue`; every other
 * trajectory gets −1 and NaN, whatever it gave: success and failure end in a terminal node,
 * worth 0, so there is nothing to bootstrap from. The outcome is read here and nowhere else.
 */
export function bootstrapColumns(
  batch: Omit<ColumnarBatch, keyof BootstrapColumns>,
  ends: TrajectoryEnds,
): BootstrapColumns {
  const nextStateId = resolveNextStates(batch, ends.nextStateText);
  const bootstrapStateId = new Int32Array(batch.trajectoryCount).fill(-1);
  const bootstrapValue = new Float64Array(batch.trajectoryCount).fill(NaN);
  for (let i = 0; i < batch.trajectoryCount; i++) {
    if (byteAt(batch.outcome, i) !== OUTCOME.truncated) continue;
    bootstrapStateId[i] = intAt(nextStateId, i);
    bootstrapValue[i] = at(ends.nextValue, i);
  }
  return { bootstrapStateId, bootstrapValue };
}

/** Per trajectory, the state id of its `nextState` if that text is a state of its own group (§1.2), else −1. */
function resolveNextStates(
  batch: Pick<ColumnarBatch, 'groupTrajectoryOffsets' | 'groupStateOffsets' | 'stateTexts'>,
  nextStateText: readonly (string | undefined)[],
): Int32Array {
  const { groupTrajectoryOffsets, groupStateOffsets, stateTexts } = batch;
  const ids = new Int32Array(nextStateText.length).fill(-1);
  for (let g = 0; g + 1 < groupTrajectoryOffsets.length; g++) {
    const lo = intAt(groupStateOffsets, g);
    const hi = intAt(groupStateOffsets, g + 1);
    let dict: Map<string, number> | undefined;
    for (let i = intAt(groupTrajectoryOffsets, g); i < intAt(groupTrajectoryOffsets, g + 1); i++) {
      const text = nextStateText[i];
      if (text === undefined) continue;
      dict ??= new Map(stateTexts.slice(lo, hi).map((s, j) => [s, lo + j]));
      ids[i] = dict.get(text) ?? -1;
    }
  }
  return ids;
}
