import { groupStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { episodeTerm } from '../core/episode-advantage';
import { rangeStats } from '../core/group-stats';
import { bellmanValues } from '../core/bellman-fixed-point';
import { gaeScan, rewardToGo, tdResiduals, valuesAt } from '../core/returns';
import {
  episodeStatsParam,
  epsilonParam,
  gaeLambdaParam,
  gammaParam,
  normalizeParam,
  stepWeightParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at, byteAt, intAt } = typedReads;

/**
 * Gated-BEPO: confidence-gated Bellman credit (docs/estimators.md §2.7).
 *
 * Per task group, on the empirical transition graph (states merged by exact
 * text; each step record is one edge s → s' with reward r; a trajectory's
 * last edge goes to ⊥success/⊥failure/⊥truncated, all of value 0):
 *   V⁰(s)      = mean{ g_m : s_m = s }                               (C16)
 *   V^{j+1}(s) = (1/|E(s)|) Σ_{(s→s',r) ∈ E(s)} [ r + γ·V^j(s') ]    (synchronous)
 *   until max_s |V^{j+1} − V^j| ≤ fixedPointTol or fixedPointMaxIter sweeps
 *   δ_m   = r_m + γ·V*(s'_m) − V*(s_m)        (Σ of δ leaving each state = 0)
 *   A^FP  = GAE of δ along each trajectory with γλ  (÷ (group std + ε) if `fpNormalization = "group_std"`)
 *   ρ(s)  = 1 if E(s) reaches ≥ gateMinDistinctSuccessors distinct nodes, else 0   (C17)
 *   η     = 1 − ρ·(1 − η_on)                                            (C18)
 *   A_m   = η·A^out_i + w·ρ(s_m)·A^FP_m,   A^out = GRPO episode term  (C30)
 * With γ = 1 the fixed point still exists: every node drains into an absorbing one.
 * Defaults: γ = λ = 0.95 (C15), w = 1, η_on = 0.5 (C18), tol 1e-10, 10 000 sweeps.
 */
export const gatedBepo = defineMethod({
  name: 'gated-bepo',
  version: '1',
  description:
    'Gated-BEPO: fixed-point Bellman TD credit at states that branched, plus the GRPO outcome term',
  paper: 'Gated-BEPO, "Confidence-Gated Bellman credit" (arXiv 2608.06861)',
  params: {
    gamma: gammaParam(0.95),
    lambda: gaeLambdaParam(0.95),
    stepWeight: stepWeightParam,
    etaOn: {
      type: 'number',
      default: 0.5,
      min: 0,
      max: 1,
      description: 'η_on: weight of the outcome term at states where the gate is on',
    },
    gateMinDistinctSuccessors: {
      type: 'number',
      default: 2,
      min: 1,
      integer: true,
      description: 'distinct successor nodes a state needs for its gate to open',
    },
    fixedPointTol: {
      type: 'number',
      default: 1e-10,
      min: 0,
      exclusiveMin: true,
      description: 'stop the fixed-point sweeps when no value moves more than this',
    },
    fixedPointMaxIter: {
      type: 'number',
      default: 10000,
      min: 1,
      integer: true,
      description: 'at most this many fixed-point sweeps per task group',
    },
    fpNormalization: {
      type: 'enum',
      values: ['none', 'group_std'],
      default: 'none',
      description:
        'divide the Bellman term by its task-group std (useful with large reward scales)',
    },
    normalize: { ...normalizeParam, description: 'normalisation of the outcome term' },
    episodeStats: episodeStatsParam,
    epsilon: epsilonParam,
  },
  requires: [],
  diagnostics: [
    { name: 'value', kind: 'number', description: 'fixed-point value V*(s_t)' },
    { name: 'delta', kind: 'number', description: 'TD residual δ on the fixed point' },
    { name: 'gate', kind: 'integer', description: 'ρ(s_t): 1 where the state branched' },
    { name: 'eta', kind: 'number', description: 'η: weight of the outcome term' },
    {
      name: 'advStep',
      kind: 'number',
      description: 'Bellman term A^FP (after optional normalisation)',
    },
    { name: 'advEpisode', kind: 'number', description: 'outcome term A^out' },
  ],
  estimate(batch, p) {
    const advEpisode = episodeTerm(batch, p);
    const g = rewardToGo(batch, p.gamma);
    const V = bellmanValues(batch, g, p.gamma, p.fixedPointTol, p.fixedPointMaxIter);
    const value = valuesAt(V.value, batch.stateId);
    const delta = tdResiduals(batch, value, null, p.gamma); // every end is worth 0, ⊥truncated too
    const advStep = gaeScan(batch, delta, p.gamma * p.lambda);
    if (p.fpNormalization === 'group_std') divideByGroupStd(batch, advStep, p.epsilon);
    const gate = gates(batch, V.distinctSuccessors, p.gateMinDistinctSuccessors);
    const eta = new Float64Array(batch.stepCount);
    const advantages = new Float64Array(batch.stepCount);
    let gateOn = 0;
    for (let k = 0; k < batch.stepCount; k++) {
      const rho = byteAt(gate, k);
      gateOn += rho;
      eta[k] = 1 - rho * (1 - p.etaOn);
      advantages[k] = at(eta, k) * at(advEpisode, k) + p.stepWeight * rho * at(advStep, k);
    }
    return {
      advantages,
      diagnostics: { value, delta, gate, eta, advStep, advEpisode },
      summary: {
        gateOnRate: batch.stepCount ? gateOn / batch.stepCount : 0,
        fixedPointIterationsMax: V.iterationsMax,
        fixedPointConverged: V.converged,
      },
    };
  },
});

/** ρ(s_t) per step: 1 where the step's state leads to at least `minDistinct` distinct nodes. */
function gates(batch: ColumnarBatch, distinctSuccessors: Int32Array, minDistinct: number) {
  const gate = new Uint8Array(batch.stepCount);
  for (let k = 0; k < batch.stepCount; k++) {
    gate[k] = intAt(distinctSuccessors, intAt(batch.stateId, k)) >= minDistinct ? 1 : 0;
  }
  return gate;
}

/** x ÷ (std of its task group + ε), with σ = 1 for a one-record group (docs/estimators.md §1.7). */
function divideByGroupStd(batch: ColumnarBatch, x: Float64Array, epsilon: number): void {
  for (let grp = 0; grp < batch.groupCount; grp++) {
    const [lo, hi] = groupStepRange(batch, grp);
    const sigma = hi - lo < 2 ? 1 : rangeStats(x, lo, hi).std;
    for (let k = lo; k < hi; k++) x[k] = at(x, k) / (sigma + epsilon);
  }
}
