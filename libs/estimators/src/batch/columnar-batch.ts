import type { BatchLocation } from '../errors';
import { typedReads } from '../typed-arrays';

const { intAt } = typedReads;

/** Terminal kind of a trajectory's last transition (docs/estimators.md §1.2). */
export const OUTCOME = { success: 0, failure: 1, truncated: 2 } as const;
export type OutcomeCode = (typeof OUTCOME)[keyof typeof OUTCOME];
export const OUTCOME_NAMES = ['success', 'failure', 'truncated'] as const;

/** Optional per-step fields a method may require. */
export type StepField = 'nll' | 'value' | 'embedding';

/**
 * One rollout batch in columnar form: what every estimator reads.
 *
 * Steps are stored in canonical order (group, trajectory, step) in flat typed
 * arrays; groups and trajectories are ranges given by offset arrays. State and
 * action strings are dictionary-encoded *per task group*: the ids of group g
 * are exactly `groupStateOffsets[g] .. groupStateOffsets[g+1]-1`, numbered in
 * order of first appearance, so an anchor group is just an id and grouping
 * is array indexing, never string hashing in a hot loop.
 */
export interface ColumnarBatch {
  readonly groupCount: number;
  readonly trajectoryCount: number;
  readonly stepCount: number;

  readonly groupIds: readonly string[];
  readonly trajectoryIds: readonly string[];
  /** Trajectories of group g: `groupTrajectoryOffsets[g] .. [g+1]-1` (length groupCount+1). */
  readonly groupTrajectoryOffsets: Int32Array;
  /** Steps of trajectory i: `trajectoryStepOffsets[i] .. [i+1]-1` (length trajectoryCount+1). */
  readonly trajectoryStepOffsets: Int32Array;
  /** Per trajectory, an `OUTCOME` code (absent in the input: success iff return > 0). */
  readonly outcome: Uint8Array;

  readonly reward: Float64Array;
  /** Dictionary id of the step's `state` (unique across groups, see above). */
  readonly stateId: Int32Array;
  readonly groupStateOffsets: Int32Array;
  readonly stateTexts: readonly string[];
  /** Dictionary id of the step's `action`, encoded like states. */
  readonly actionId: Int32Array;
  readonly groupActionOffsets: Int32Array;
  readonly actionTexts: readonly string[];

  /**
   * Per trajectory, what its end may bootstrap from (docs/estimators.md §1.3), resolved once by
   * the builder so that methods never look at outcomes: for a `truncated` trajectory, the state
   * id of its last step's `nextState` if that text is a state of the same group, else −1; −1 for
   * every other trajectory (a terminal node, worth 0).
   */
  readonly bootstrapStateId: Int32Array;
  /** Per trajectory: a `truncated` trajectory's last `nextValue`; NaN if absent or not truncated. */
  readonly bootstrapValue: Float64Array;

  /** Mean token NLL per step (`nll`, else −mean(tokenLogprobs)); NaN for a
   * step with zero tokens or without the field (see `firstMissing`). */
  readonly nll: Float64Array;
  /** Critic value per step; NaN where absent. */
  readonly value: Float64Array;
  /** Row-major stepCount × embeddingDim; zeros where absent. Stored as float32,
   * like the server stores them, so the CLI and the server compute on the same
   * numbers. */
  readonly embedding: Float32Array;
  readonly embeddingDim: number;

  /** Global step index of the first step lacking each optional field, or -1. */
  readonly firstMissing: Readonly<Record<StepField, number>>;
}

/** Where global step `step` sits, for error messages (binary search, O(log n)). */
export function locateStep(batch: ColumnarBatch, step: number): BatchLocation {
  const traj = upperBound(batch.trajectoryStepOffsets, step) - 1;
  const group = upperBound(batch.groupTrajectoryOffsets, traj) - 1;
  const stepIndex = step - (batch.trajectoryStepOffsets[traj] ?? 0);
  const trajInGroup = traj - (batch.groupTrajectoryOffsets[group] ?? 0);
  return {
    groupId: batch.groupIds[group],
    trajectoryId: batch.trajectoryIds[traj],
    stepIndex,
    path: `groups[${group}].trajectories[${trajInGroup}].steps[${stepIndex}]`,
  };
}

/** Index of the first element > x in a sorted array. */
function upperBound(sorted: Int32Array, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (intAt(sorted, mid) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Global step indices [first, end) of task group g. */
export function groupStepRange(batch: ColumnarBatch, g: number): [number, number] {
  const t = batch.groupTrajectoryOffsets;
  const s = batch.trajectoryStepOffsets;
  return [intAt(s, intAt(t, g)), intAt(s, intAt(t, g + 1))];
}
