import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';

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
  const base = batch.groupStateOffsets[g] as number;
  const K = (batch.groupStateOffsets[g + 1] as number) - base;
  const [lo, hi] = groupStepRange(batch, g);
  const m = hi - lo;
  const edgeSource = new Int32Array(m);
  const edgeTarget = new Int32Array(m);
  const outDegree = new Int32Array(K);
  const rewardSum = new Float64Array(K);
  for (
    let t = batch.groupTrajectoryOffsets[g] as number;
    t < (batch.groupTrajectoryOffsets[g + 1] as number);
    t++
  ) {
    const last = (batch.trajectoryStepOffsets[t + 1] as number) - 1;
    for (let k = batch.trajectoryStepOffsets[t] as number; k <= last; k++) {
      const s = (batch.stateId[k] as number) - base;
      edgeSource[k - lo] = s;
      edgeTarget[k - lo] =
        k < last ? (batch.stateId[k + 1] as number) - base : K + (batch.outcome[t] as number);
      outDegree[s] = (outDegree[s] as number) + 1;
      rewardSum[s] = (rewardSum[s] as number) + (batch.reward[k] as number);
    }
  }
  // Counting sort of edges by source, then merge equal successors per source.
  const firstEdge = new Int32Array(K + 1);
  for (let s = 0; s < K; s++)
    firstEdge[s + 1] = (firstEdge[s] as number) + (outDegree[s] as number);
  const fill = firstEdge.slice(0, K);
  const bySource = new Int32Array(m);
  for (let e = 0; e < m; e++) {
    const s = edgeSource[e] as number;
    const slot = fill[s] as number;
    fill[s] = slot + 1;
    bySource[slot] = edgeTarget[e] as number;
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
    const deg = outDegree[s] as number;
    for (let e = firstEdge[s] as number; e < (firstEdge[s + 1] as number); e++) {
      const d = bySource[e] as number;
      if ((slotOf[d] as number) < (rowStart[s] as number)) {
        slotOf[d] = n;
        succ[n++] = d;
      }
      const slot = slotOf[d] as number;
      succWeight[slot] = (succWeight[slot] as number) + 1 / deg;
    }
    distinctSuccessors[s] = n - (rowStart[s] as number);
    meanReward[s] = (rewardSum[s] as number) / deg;
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
