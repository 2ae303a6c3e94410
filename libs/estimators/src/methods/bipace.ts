import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { cosineClusters, type Clusters } from '../core/cosine-clusters';
import { episodeAdvantage } from '../core/episode-advantage';
import { groupStats, type GroupStats } from '../core/group-stats';
import { groupingSummary } from '../core/grouping-summary';
import { broadcastToSteps, episodeReturns, rewardToGo } from '../core/returns';
import { localBucketIds } from '../core/step-groups';
import {
  episodeStatsParam,
  epsilonParam,
  gammaParam,
  normalizeParam,
  stepWeightParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';

/**
 * BiPACE = BiGPO state clusters + PACE action-conditioned baseline (docs/estimators.md §2.9).
 *
 * States are grouped by greedy cosine clustering of the policy's hidden state
 * (distance 1 − φ·ĉ ≤ ε, see cosineClusters). In cluster C with members M:
 *   V̂_C = mean{g_m}, σ_C = std{g_m};  a singleton cluster gives A^S = 0
 *   q_style:   Q̂_C(a) = mean{g_m' : a_m' = a} (the record included, C24),
 *              shrunk Q̃ = (n_a·Q̂ + κ·V̂_C)/(n_a + κ);  A^S = (Q̃ − V̂_C)/(σ_C + ε)  [or Q̃ − V̂_C]
 *   diff_peer: b_m = mean{g_m' : a_m' ≠ a_m} (none → V̂_C, C25); A^S = (g_m − b_m)/(σ_C + ε)  [or g_m − b_m]
 *   A_{i,t} = A^ep_i + w·A^S_{i,t},   A^ep = GRPO episode term.
 * Defaults: γ = 0.95, ε = 0.10, q_style, w = 1 (C29), mean-std (C26), κ = 0 (C27).
 */
export const bipace = defineMethod({
  name: 'bipace',
  version: '1',
  description:
    'BiPACE: hidden-state clusters as step groups, action-conditioned (Q − V) step baseline',
  paper: 'BiPACE, "Bisimulation-grouped, action-conditioned credit" (arXiv 2606.25556)',
  params: {
    gamma: gammaParam(0.95),
    stepWeight: stepWeightParam,
    clusterEpsilon: {
      type: 'number',
      default: 0.1,
      min: 0,
      max: 2,
      description: 'cosine-distance radius ε for joining a cluster (0: identical directions only)',
    },
    estimator: {
      type: 'enum',
      values: ['q_style', 'diff_peer'],
      default: 'q_style',
      description:
        'PACE baseline: same-action mean vs cluster mean, or own return vs other-action peers',
    },
    normalize: normalizeParam,
    shrinkage: {
      type: 'number',
      default: 0,
      min: 0,
      description: 'κ: pulls Q̂ toward V̂ for rarely taken actions (q_style only)',
    },
    episodeStats: episodeStatsParam,
    epsilon: epsilonParam,
  },
  requires: ['embedding'],
  diagnostics: [
    { name: 'clusterId', kind: 'integer', description: 'cluster within the task group' },
    {
      name: 'clusterDist',
      kind: 'number',
      description: 'cosine distance to the centroid on joining (null: founder)',
    },
    { name: 'value', kind: 'number', description: 'V̂_C, mean return of the cluster' },
    {
      name: 'q',
      kind: 'number',
      description: 'Q̂_C(a) after shrinkage (q_style, non-singleton clusters)',
    },
    {
      name: 'actionPeers',
      kind: 'integer',
      description: 'n_a, cluster members that took the same action',
    },
    { name: 'advEpisode', kind: 'number', description: 'episode term A^ep' },
    { name: 'advStep', kind: 'number', description: 'PACE step term A^S (before the weight w)' },
  ],
  estimate(batch, p) {
    const advEpisode = broadcastToSteps(
      batch,
      episodeAdvantage(batch, episodeReturns(batch), p).advantage,
    );
    const g = rewardToGo(batch, p.gamma);
    const clusters = cosineClusters(batch, p.clusterEpsilon);
    const stats = groupStats(g, clusters.bucketOf, clusters.bucketCount);
    const peers = actionPeerSums(batch, clusters, g);
    const value = new Float64Array(batch.stepCount);
    const q = new Float64Array(batch.stepCount).fill(NaN);
    const advStep = new Float64Array(batch.stepCount);
    const advantages = new Float64Array(batch.stepCount);
    const withStd = p.normalize === 'mean-std';
    for (let k = 0; k < batch.stepCount; k++) {
      const c = clusters.bucketOf[k] as number;
      const V = stats.mean[c] as number;
      value[k] = V;
      if ((stats.count[c] as number) >= 2) {
        const scale = withStd ? 1 / ((stats.std[c] as number) + p.epsilon) : 1;
        const nA = peers.count[k] as number;
        if (p.estimator === 'q_style') {
          const Q = ((peers.sum[k] as number) + p.shrinkage * V) / (nA + p.shrinkage);
          q[k] = Q;
          advStep[k] = (Q - V) * scale;
        } else {
          const others = (stats.count[c] as number) - nA;
          const b = others > 0 ? (clusterSum(stats, c) - (peers.sum[k] as number)) / others : V;
          advStep[k] = ((g[k] as number) - b) * scale;
        }
      }
      advantages[k] = (advEpisode[k] as number) + p.stepWeight * (advStep[k] as number);
    }
    return {
      advantages,
      diagnostics: {
        clusterId: localBucketIds(batch, clusters),
        clusterDist: clusters.distance,
        value,
        q,
        actionPeers: peers.count,
        advEpisode,
        advStep,
      },
      summary: {
        ...groupingSummary(stats.count, 'cluster'),
        mergedClusterCount: mergedClusterCount(batch, clusters),
      },
    };
  },
});

function clusterSum(stats: GroupStats, c: number): number {
  return (stats.mean[c] as number) * (stats.count[c] as number);
}

/** Per step: n_a and Σ g over the members of its cluster that took the same action. */
function actionPeerSums(batch: ColumnarBatch, clusters: Clusters, g: Float64Array) {
  const sum = new Float64Array(batch.stepCount);
  const count = new Int32Array(batch.stepCount);
  for (let grp = 0; grp < batch.groupCount; grp++) {
    const [lo, hi] = groupStepRange(batch, grp);
    const acc = new Map<number, { sum: number; count: number }>();
    const firstAction = batch.groupActionOffsets[grp] as number;
    const actions = (batch.groupActionOffsets[grp + 1] as number) - firstAction;
    const key = (k: number) =>
      (clusters.bucketOf[k] as number) * actions + (batch.actionId[k] as number) - firstAction;
    for (let k = lo; k < hi; k++) {
      const entry = acc.get(key(k));
      if (entry) {
        entry.sum += g[k] as number;
        entry.count++;
      } else acc.set(key(k), { sum: g[k] as number, count: 1 });
    }
    for (let k = lo; k < hi; k++) {
      const entry = acc.get(key(k)) as { sum: number; count: number };
      sum[k] = entry.sum;
      count[k] = entry.count;
    }
  }
  return { sum, count };
}

/** Clusters whose members carry more than one distinct anchor text (what BiGPO merged beyond exact hashing). */
function mergedClusterCount(batch: ColumnarBatch, clusters: Clusters): number {
  const firstState = new Int32Array(clusters.bucketCount).fill(-1);
  const merged = new Uint8Array(clusters.bucketCount);
  for (let k = 0; k < batch.stepCount; k++) {
    const c = clusters.bucketOf[k] as number;
    if (firstState[c] === -1) firstState[c] = batch.stateId[k] as number;
    else if (firstState[c] !== batch.stateId[k]) merged[c] = 1;
  }
  return merged.reduce((a, b) => a + b, 0);
}
