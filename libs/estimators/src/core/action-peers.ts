import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';
import type { Clusters } from './cosine-clusters';

const { at, intAt } = typedReads;

/** Per step: how many members of its cluster took the same action (itself included), and their Σ g. */
export interface ActionPeers {
  count: Int32Array;
  sum: Float64Array;
}

/** PACE's same-action peers (docs/estimators.md §2.9), per cluster and action of each task group. */
export function actionPeers(
  batch: ColumnarBatch,
  clusters: Clusters,
  g: Float64Array,
): ActionPeers {
  const sum = new Float64Array(batch.stepCount);
  const count = new Int32Array(batch.stepCount);
  for (let grp = 0; grp < batch.groupCount; grp++) {
    const [lo, hi] = groupStepRange(batch, grp);
    const acc = new Map<number, { sum: number; count: number }>();
    const firstAction = intAt(batch.groupActionOffsets, grp);
    const actions = intAt(batch.groupActionOffsets, grp + 1) - firstAction;
    const key = (k: number) =>
      intAt(clusters.bucketOf, k) * actions + intAt(batch.actionId, k) - firstAction;
    for (let k = lo; k < hi; k++) {
      const entry = acc.get(key(k));
      if (entry) {
        entry.sum += at(g, k);
        entry.count++;
      } else acc.set(key(k), { sum: at(g, k), count: 1 });
    }
    for (let k = lo; k < hi; k++) {
      const entry = acc.get(key(k)) as { sum: number; count: number }; // set in the loop above
      sum[k] = entry.sum;
      count[k] = entry.count;
    }
  }
  return { count, sum };
}
