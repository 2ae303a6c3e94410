import { typedReads } from '../typed-arrays';
import { OUTCOME, type ColumnarBatch } from './columnar-batch';

const { at, byteAt, intAt } = typedReads;

/** What follows each step (docs/estimators.md §1.2–1.3): the batch's termination, in one place. */
export interface SuccessorColumns {
  continues: Uint8Array;
  successorStateId: Int32Array;
  successorValue: Float64Array;
}

/** What the last step of each trajectory gives as its successor, if anything. */
export interface TrajectoryEnds {
  nextStateText: readonly (string | undefined)[];
  /** NaN where absent. */
  nextValue: Float64Array;
}

/**
 * Per step: `continues` is 1 when step t + 1 of the same trajectory follows and 0 at a
 * trajectory's last step; the successor of step t < T is step t + 1 (its state, its `value`).
 * The successor of a last step is a terminal node, worth 0 (−1, NaN), except at a truncated
 * end: there it is what the trajectory names to bootstrap from, used only by methods asked to.
 */
export function successorColumns(
  batch: Omit<ColumnarBatch, keyof SuccessorColumns>,
  ends: TrajectoryEnds,
): SuccessorColumns {
  const { trajectoryStepOffsets, stateId, value, outcome } = batch;
  const nextStateId = resolveNextStates(batch, ends.nextStateText);
  const n = stateId.length;
  const continues = new Uint8Array(n).fill(1);
  const successorStateId = new Int32Array(n);
  const successorValue = new Float64Array(n);
  successorStateId.set(stateId.subarray(1));
  successorValue.set(value.subarray(1));
  for (let i = 0; i < outcome.length; i++) {
    const last = intAt(trajectoryStepOffsets, i + 1) - 1;
    const truncated = byteAt(outcome, i) === OUTCOME.truncated;
    continues[last] = 0;
    successorStateId[last] = truncated ? intAt(nextStateId, i) : -1;
    successorValue[last] = truncated ? at(ends.nextValue, i) : NaN;
  }
  return { continues, successorStateId, successorValue };
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
