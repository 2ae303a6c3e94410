import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';
import { transitionGraph, type TransitionGraph } from './transition-graph';

const { at, intAt } = typedReads;

/** V* of every state of the batch, and what Gated-BEPO's gate reads from the graphs. */
export interface BellmanValues {
  /** V*(s) per state id. */
  value: Float64Array;
  /** Distinct successor nodes of each state id in its task group's graph. */
  distinctSuccessors: Int32Array;
  /** The most sweeps any task group needed, and whether every one met the tolerance. */
  iterationsMax: number;
  converged: boolean;
}

/**
 * Gated-BEPO's state values (docs/estimators.md §2.7), task group by task group, on its
 * transition graph (§1.4.5), whose absorbing nodes are worth 0:
 *   V⁰(s)      = mean{ g_m : s_m = s }
 *   V^{j+1}(s) = mean over the edges (s → s', r) leaving s of r + γ·V^j(s')   (synchronous)
 * until max_s |V^{j+1}(s) − V^j(s)| ≤ tol, or maxIter sweeps.
 */
export function bellmanValues(
  batch: ColumnarBatch,
  g: Float64Array,
  gamma: number,
  tol: number,
  maxIter: number,
): BellmanValues {
  const value = new Float64Array(batch.stateTexts.length);
  const distinctSuccessors = new Int32Array(batch.stateTexts.length);
  let iterationsMax = 0;
  let converged = true;
  for (let grp = 0; grp < batch.groupCount; grp++) {
    const graph = transitionGraph(batch, grp);
    const [firstStep] = groupStepRange(batch, grp);
    const fp = fixedPoint(graph, initialValues(graph, g, firstStep), gamma, tol, maxIter);
    const firstState = intAt(batch.groupStateOffsets, grp);
    value.set(fp.V.subarray(0, graph.stateCount), firstState);
    distinctSuccessors.set(graph.distinctSuccessors, firstState);
    iterationsMax = Math.max(iterationsMax, fp.iterations);
    converged &&= fp.converged;
  }
  return { value, distinctSuccessors, iterationsMax, converged };
}

/** V⁰(s) = mean Monte-Carlo return of the records in s; absorbing nodes 0. */
function initialValues(graph: TransitionGraph, g: Float64Array, firstStep: number): Float64Array {
  const K = graph.stateCount;
  const V = new Float64Array(K + 3);
  const count = new Int32Array(K);
  for (let e = 0; e < graph.edgeSource.length; e++) {
    const s = intAt(graph.edgeSource, e);
    V[s] = at(V, s) + at(g, firstStep + e);
    count[s] = intAt(count, s) + 1;
  }
  for (let s = 0; s < K; s++) V[s] = at(V, s) / intAt(count, s);
  return V;
}

/** Synchronous mean-Bellman sweeps over the merged successor lists. */
function fixedPoint(
  graph: TransitionGraph,
  V0: Float64Array,
  gamma: number,
  tol: number,
  maxIter: number,
): { V: Float64Array; iterations: number; converged: boolean } {
  const K = graph.stateCount;
  let V: Float64Array = V0;
  let next: Float64Array = new Float64Array(V0.length); // absorbing nodes stay 0
  const { rowStart, succ, succWeight, meanReward } = graph;
  for (let it = 1; it <= maxIter; it++) {
    let change = 0;
    for (let s = 0; s < K; s++) {
      let backup = 0;
      for (let e = intAt(rowStart, s); e < intAt(rowStart, s + 1); e++) {
        backup += at(succWeight, e) * at(V, intAt(succ, e));
      }
      const v = at(meanReward, s) + gamma * backup;
      change = Math.max(change, Math.abs(v - at(V, s)));
      next[s] = v;
    }
    [V, next] = [next, V];
    if (change <= tol) return { V, iterations: it, converged: true };
  }
  return { V, iterations: maxIter, converged: false };
}
