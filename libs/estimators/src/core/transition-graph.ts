import {
  groupStepRange,
  groupTrajectoryRange,
  trajectoryStepRange,
  type ColumnarBatch,
} from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';

const { at, byteAt, intAt } = typedReads;

/**
 * The empirical transition graph of one task group (docs/estimators.md §1.4.5), in CSR
 * form with parallel edges merged: node s has distinct successors
 * `succ[rowStart[s] .. rowStart[s+1]-1]`, each with weight (edges to it)/|E(s)|.
 * Nodes 0..K-1 are the group's states (local ids), K, K+1, K+2 the absorbing
 * ⊥success, ⊥failure, ⊥truncated.
 */
export interface TransitionGraph {
  stateCount: number;
  /** Local source and successor node of each step record of the group. */
  edgeSource: Int32Array;
  edgeTarget: Int32Array;
  rowStart: Int32Array;
  succ: Int32Array;
  succWeight: Float64Array;
  /** Mean reward over the edges leaving each state. */
  meanReward: Float64Array;
  distinctSuccessors: Int32Array;
}

export function transitionGraph(batch: ColumnarBatch, g: number): TransitionGraph {
  const stateCount = intAt(batch.groupStateOffsets, g + 1) - intAt(batch.groupStateOffsets, g);
  const { edgeSource, edgeTarget } = groupEdges(batch, g, stateCount);
  const [lo, hi] = groupStepRange(batch, g);
  const reward = batch.reward.subarray(lo, hi);
  return {
    stateCount,
    edgeSource,
    edgeTarget,
    ...successorLists(edgeSource, edgeTarget, reward, stateCount),
  };
}

/** One edge per step record, from its state to its successor (§1.2), in local node ids. */
function groupEdges(batch: ColumnarBatch, g: number, K: number) {
  const base = intAt(batch.groupStateOffsets, g);
  const [lo, hi] = groupStepRange(batch, g);
  const edgeSource = new Int32Array(hi - lo);
  const edgeTarget = new Int32Array(hi - lo);
  const [first, end] = groupTrajectoryRange(batch, g);
  for (let t = first; t < end; t++) {
    const terminal = K + byteAt(batch.outcome, t);
    const [from, to] = trajectoryStepRange(batch, t);
    for (let k = from; k < to; k++) {
      edgeSource[k - lo] = intAt(batch.stateId, k) - base;
      edgeTarget[k - lo] = batch.continues[k] ? intAt(batch.stateId, k + 1) - base : terminal;
    }
  }
  return { edgeSource, edgeTarget };
}

/** The CSR successor lists with parallel edges merged, the mean rewards and distinct successor counts. */
function successorLists(source: Int32Array, target: Int32Array, reward: Float64Array, K: number) {
  const { outDegree, rewardSum, firstEdge, bySource } = sortEdgesBySource(
    source,
    target,
    reward,
    K,
  );
  const rowStart = new Int32Array(K + 1);
  const succ = new Int32Array(source.length);
  const succWeight = new Float64Array(source.length);
  const slotOf = new Int32Array(K + 3).fill(-1);
  const distinctSuccessors = new Int32Array(K);
  const meanReward = new Float64Array(K);
  let n = 0;
  for (let s = 0; s < K; s++) {
    rowStart[s] = n;
    const deg = intAt(outDegree, s);
    for (let e = intAt(firstEdge, s); e < intAt(firstEdge, s + 1); e++) {
      const d = intAt(bySource, e);
      if (intAt(slotOf, d) < intAt(rowStart, s)) {
        slotOf[d] = n;
        succ[n++] = d;
      }
      const slot = intAt(slotOf, d);
      succWeight[slot] = at(succWeight, slot) + 1 / deg;
    }
    distinctSuccessors[s] = n - intAt(rowStart, s);
    meanReward[s] = at(rewardSum, s) / deg;
  }
  rowStart[K] = n;
  return {
    rowStart,
    succ: succ.subarray(0, n),
    succWeight: succWeight.subarray(0, n),
    meanReward,
    distinctSuccessors,
  };
}

/** Counting sort of the edges by source: edges of s are bySource[firstEdge[s] .. firstEdge[s+1]-1]. */
function sortEdgesBySource(
  source: Int32Array,
  target: Int32Array,
  reward: Float64Array,
  K: number,
) {
  const outDegree = new Int32Array(K);
  const rewardSum = new Float64Array(K);
  for (let e = 0; e < source.length; e++) {
    const s = intAt(source, e);
    outDegree[s] = intAt(outDegree, s) + 1;
    rewardSum[s] = at(rewardSum, s) + at(reward, e);
  }
  const firstEdge = new Int32Array(K + 1);
  for (let s = 0; s < K; s++) firstEdge[s + 1] = intAt(firstEdge, s) + intAt(outDegree, s);
  const fill = firstEdge.slice(0, K);
  const bySource = new Int32Array(source.length);
  for (let e = 0; e < source.length; e++) {
    const s = intAt(source, e);
    const slot = intAt(fill, s);
    fill[s] = slot + 1;
    bySource[slot] = intAt(target, e);
  }
  return { outDegree, rewardSum, firstEdge, bySource };
}
