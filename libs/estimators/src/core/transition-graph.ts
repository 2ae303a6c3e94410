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
  const K = intAt(batch.groupStateOffsets, g + 1) - intAt(batch.groupStateOffsets, g);
  const edges = groupEdges(batch, g, K);
  const lists = successorLists(edges, K);
  return {
    stateCount: K,
    edgeSource: edges.source,
    edgeTarget: edges.target,
    rowStart: lists.rowStart,
    succ: lists.succ,
    succWeight: lists.succWeight,
    meanReward: lists.meanReward,
    distinctSuccessors: lists.distinctSuccessors,
  };
}

interface Edges {
  source: Int32Array;
  target: Int32Array;
  outDegree: Int32Array;
  rewardSum: Float64Array;
}

/** One edge per step record, from its state to its successor (§1.2), in local node ids. */
function groupEdges(batch: ColumnarBatch, g: number, K: number): Edges {
  const { stateId, reward, outcome } = batch;
  const base = intAt(batch.groupStateOffsets, g);
  const [lo, hi] = groupStepRange(batch, g);
  const source = new Int32Array(hi - lo);
  const target = new Int32Array(hi - lo);
  const outDegree = new Int32Array(K);
  const rewardSum = new Float64Array(K);
  const tOff = batch.groupTrajectoryOffsets;
  const off = batch.trajectoryStepOffsets;
  for (let t = intAt(tOff, g); t < intAt(tOff, g + 1); t++) {
    const terminal = K + byteAt(outcome, t);
    const last = intAt(off, t + 1) - 1;
    for (let k = intAt(off, t); k <= last; k++) {
      const s = intAt(stateId, k) - base;
      source[k - lo] = s;
      target[k - lo] = k < last ? intAt(stateId, k + 1) - base : terminal;
      outDegree[s] = intAt(outDegree, s) + 1;
      rewardSum[s] = at(rewardSum, s) + at(reward, k);
    }
  }
  return { source, target, outDegree, rewardSum };
}

/** CSR successor lists with parallel edges merged, mean rewards and distinct successor counts. */
function successorLists(edges: Edges, K: number) {
  const { firstEdge, bySource } = sortBySource(edges, K);
  const rowStart = new Int32Array(K + 1);
  const succ = new Int32Array(bySource.length);
  const succWeight = new Float64Array(bySource.length);
  const slotOf = new Int32Array(K + 3).fill(-1);
  const distinctSuccessors = new Int32Array(K);
  const meanReward = new Float64Array(K);
  let n = 0;
  for (let s = 0; s < K; s++) {
    rowStart[s] = n;
    const deg = intAt(edges.outDegree, s);
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
    meanReward[s] = at(edges.rewardSum, s) / deg;
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

/** Counting sort of the edge targets by source: those of s are bySource[firstEdge[s] .. firstEdge[s+1]-1]. */
function sortBySource(edges: Edges, K: number) {
  const firstEdge = new Int32Array(K + 1);
  for (let s = 0; s < K; s++) firstEdge[s + 1] = intAt(firstEdge, s) + intAt(edges.outDegree, s);
  const fill = firstEdge.slice(0, K);
  const bySource = new Int32Array(edges.source.length);
  for (let e = 0; e < edges.source.length; e++) {
    const s = intAt(edges.source, e);
    const slot = intAt(fill, s);
    fill[s] = slot + 1;
    bySource[slot] = intAt(edges.target, e);
  }
  return { firstEdge, bySource };
}
