import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
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
  const base = intAt(batch.groupStateOffsets, g);
  const K = intAt(batch.groupStateOffsets, g + 1) - base;
  const [lo, hi] = groupStepRange(batch, g);
  const m = hi - lo;
  const edgeSource = new Int32Array(m);
  const edgeTarget = new Int32Array(m);
  const outDegree = new Int32Array(K);
  const rewardSum = new Float64Array(K);
  for (
    let t = intAt(batch.groupTrajectoryOffsets, g);
    t < intAt(batch.groupTrajectoryOffsets, g + 1);
    t++
  ) {
    const last = intAt(batch.trajectoryStepOffsets, t + 1) - 1;
    for (let k = intAt(batch.trajectoryStepOffsets, t); k <= last; k++) {
      const s = intAt(batch.stateId, k) - base;
      edgeSource[k - lo] = s;
      edgeTarget[k - lo] =
        k < last ? intAt(batch.stateId, k + 1) - base : K + byteAt(batch.outcome, t);
      outDegree[s] = intAt(outDegree, s) + 1;
      rewardSum[s] = at(rewardSum, s) + at(batch.reward, k);
    }
  }
  // Counting sort of edges by source, then merge equal successors per source.
  const firstEdge = new Int32Array(K + 1);
  for (let s = 0; s < K; s++) firstEdge[s + 1] = intAt(firstEdge, s) + intAt(outDegree, s);
  const fill = firstEdge.slice(0, K);
  const bySource = new Int32Array(m);
  for (let e = 0; e < m; e++) {
    const s = intAt(edgeSource, e);
    const slot = intAt(fill, s);
    fill[s] = slot + 1;
    bySource[slot] = intAt(edgeTarget, e);
  }

  const rowStart = new Int32Array(K + 1);
  const succ = new Int32Array(m);
  const succWeight = new Float64Array(m);
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
    stateCount: K,
    edgeSource,
    edgeTarget,
    rowStart,
    succ: succ.subarray(0, n),
    succWeight: succWeight.subarray(0, n),
    meanReward,
    distinctSuccessors,
  };
}
