import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { SequenceRatio } from './difflib-ratio';
import { typedReads } from '../typed-arrays';

const { intAt } = typedReads;

/**
 * A partition of the step records into step groups that never span task
 * groups. Buckets of task group g are `groupBucketOffsets[g] .. [g+1]-1`,
 * numbered in order of first appearance.
 */
export interface StepGroups {
  bucketOf: Int32Array;
  bucketCount: number;
  groupBucketOffsets: Int32Array;
}

/** Exact anchor groups 𝒢(k, s): the per-group state dictionary already is the partition. */
export function exactStepGroups(batch: ColumnarBatch): StepGroups {
  return {
    bucketOf: batch.stateId,
    bucketCount: batch.stateTexts.length,
    groupBucketOffsets: batch.groupStateOffsets,
  };
}

/**
 * GiGPO's greedy similarity groups (docs/estimators.md §1.4.3): walk the records of a task
 * group in batch order; a record joins the *first* group (in creation order)
 * whose representative text r — its first member's, never updated — has
 * ratio(record, r) ≥ θ, else it founds a new group.
 *
 * The walk's answer depends only on the record's text and the groups existing
 * before that text first appeared, so it is computed once per distinct state
 * and reused; a cheap upper bound of the ratio skips most comparisons.
 */
export function similarityStepGroups(batch: ColumnarBatch, threshold: number): StepGroups {
  const bucketOf = new Int32Array(batch.stepCount);
  const groupBucketOffsets = new Int32Array(batch.groupCount + 1);
  const bucketOfState = new Int32Array(batch.stateTexts.length).fill(-1);
  let bucketCount = 0;
  for (let g = 0; g < batch.groupCount; g++) {
    const representatives: SequenceRatio[] = [];
    const [firstStep, endStep] = groupStepRange(batch, g);
    for (let k = firstStep; k < endStep; k++) {
      const s = intAt(batch.stateId, k);
      if (bucketOfState[s] === -1) {
        const text = batch.stateTexts[s] as string;
        let found = representatives.findIndex(
          (rep) => rep.upperBound(text) >= threshold && rep.ratio(text) >= threshold,
        );
        if (found === -1) {
          found = representatives.length;
          representatives.push(new SequenceRatio(text));
        }
        bucketOfState[s] = bucketCount + found;
      }
      bucketOf[k] = intAt(bucketOfState, s);
    }
    bucketCount += representatives.length;
    groupBucketOffsets[g + 1] = bucketCount;
  }
  return { bucketOf, bucketCount, groupBucketOffsets };
}

/** Bucket id relative to its task group (0, 1, ... in order of first appearance), per step. */
export function localBucketIds(batch: ColumnarBatch, groups: StepGroups): Int32Array {
  const out = new Int32Array(batch.stepCount);
  for (let g = 0; g < batch.groupCount; g++) {
    const base = intAt(groups.groupBucketOffsets, g);
    const [lo, hi] = groupStepRange(batch, g);
    for (let k = lo; k < hi; k++) out[k] = intAt(groups.bucketOf, k) - base;
  }
  return out;
}
