import { actionPeers, type ActionPeers } from '../core/action-peers';
import { cosineClusters, mergedClusterCount } from '../core/cosine-clusters';
import { plusScaled } from '../core/elementwise';
import { episodeTerm } from '../core/episode-advantage';
import { groupStats, type GroupStats, type Normalize } from '../core/group-stats';
import { groupingSummary } from '../core/grouping-summary';
import { rewardToGo } from '../core/returns';
import { localBucketIds } from '../core/step-groups';
import {
  episodeStatsParam,
  epsilonParam,
  gammaParam,
  normalizeParam,
  stepWeightParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

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
  version: '2', // 2: identical embeddings merge at ε = 0 (distanceRounding in cosine-clusters.ts)
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
  inputs: () => ['state', 'action', 'embedding'],
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
    const advEpisode = episodeTerm(batch, p);
    const g = rewardToGo(batch, p.gamma);
    const clusters = cosineClusters(batch, p.clusterEpsilon);
    const stats = groupStats(g, clusters.bucketOf, clusters.bucketCount);
    const peers = actionPeers(batch, clusters, g);
    const { advStep, value, q } = paceStepTerm(g, clusters.bucketOf, stats, peers, p);
    return {
      advantages: plusScaled(advEpisode, p.stepWeight, advStep),
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

/**
 * A^S per step (0 in a singleton cluster), with V̂_C and, for q_style, Q̃ for the diagnostics.
 * Σ g over the cluster is V̂_C·|C|; over the same-action peers it is n_a·Q̂.
 */
function paceStepTerm(
  g: Float64Array,
  clusterOf: Int32Array,
  stats: GroupStats,
  peers: ActionPeers,
  p: {
    estimator: 'q_style' | 'diff_peer';
    normalize: Normalize;
    shrinkage: number;
    epsilon: number;
  },
) {
  const value = new Float64Array(g.length);
  const q = new Float64Array(g.length).fill(NaN);
  const advStep = new Float64Array(g.length);
  for (let k = 0; k < g.length; k++) {
    const c = intAt(clusterOf, k);
    const V = at(stats.mean, c);
    const size = intAt(stats.count, c);
    value[k] = V;
    if (size < 2) continue;
    const scale = p.normalize === 'mean-std' ? 1 / (at(stats.std, c) + p.epsilon) : 1;
    const nA = intAt(peers.count, k);
    if (p.estimator === 'q_style') {
      const Q = (at(peers.sum, k) + p.shrinkage * V) / (nA + p.shrinkage);
      q[k] = Q;
      advStep[k] = (Q - V) * scale;
    } else {
      const others = size - nA;
      const b = others > 0 ? (V * size - at(peers.sum, k)) / others : V;
      advStep[k] = (at(g, k) - b) * scale;
    }
  }
  return { advStep, value, q };
}
