import type { ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';
import type { StepGroups } from './step-groups';

const { at, intAt } = typedReads;

/**
 * GACA's criticality c_t (docs/estimators.md §2.6), per trajectory, from the mean token NLL
 * H_t and the change of the reward-to-go g:
 *   ê_t = H_t / mean(H)   (mean ≤ 0 → 1)
 *   Δ_1 = 0, Δ_t = |g_t − g_{t−1}|;   d̂_t = Δ_t / mean(Δ)   (mean 0 → 1)
 *   score_t = α_c·ê_t + (1 − α_c)·d̂_t;   c_t = score_t / mean(score)   (mean ≤ 0 → 1)
 * H = NaN marks a step without a score input: with `undefinedIsNeutral` (plain GACA,
 * zero-token steps) it gets ê = 1 and still counts in mean(score); otherwise (debiased,
 * singletons) it gets c = 1 and is left out of every mean.
 */
export function criticalityScores(
  batch: ColumnarBatch,
  H: Float64Array,
  g: Float64Array,
  alphaC: number,
  undefinedIsNeutral: boolean,
): Float64Array {
  const c = new Float64Array(batch.stepCount);
  const off = batch.trajectoryStepOffsets;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    const lo = intAt(off, i);
    const hi = intAt(off, i + 1);
    const { meanH, meanDelta } = trajectoryMeans(H, g, lo, hi);
    let sumScore = 0;
    let nScore = 0;
    for (let k = lo; k < hi; k++) {
      const h = at(H, k);
      if (Number.isNaN(h) && !undefinedIsNeutral) {
        c[k] = NaN;
        continue;
      }
      const e = Number.isNaN(h) || meanH <= 0 ? 1 : h / meanH;
      const d = meanDelta === 0 ? 1 : returnChange(g, lo, k) / meanDelta;
      c[k] = alphaC * e + (1 - alphaC) * d;
      sumScore += at(c, k);
      nScore++;
    }
    const meanScore = nScore > 0 ? sumScore / nScore : 0;
    for (let k = lo; k < hi; k++) {
      c[k] = Number.isNaN(c[k]) || meanScore <= 0 ? 1 : at(c, k) / meanScore;
    }
  }
  return c;
}

/** Δ_t of the step k of a trajectory that starts at lo. */
function returnChange(g: Float64Array, lo: number, k: number): number {
  return k > lo ? Math.abs(at(g, k) - at(g, k - 1)) : 0;
}

/** mean(H) over the steps that have one (0 if none), and mean(Δ) over all steps. */
function trajectoryMeans(H: Float64Array, g: Float64Array, lo: number, hi: number) {
  let sumH = 0;
  let nH = 0;
  let sumDelta = 0;
  for (let k = lo; k < hi; k++) {
    if (!Number.isNaN(H[k])) {
      sumH += at(H, k);
      nH++;
    }
    if (k > lo) sumDelta += returnChange(g, lo, k);
  }
  return { meanH: nH > 0 ? sumH / nH : 0, meanDelta: sumDelta / (hi - lo) };
}

/** H^LOO: mean NLL of the *other* members of the step's anchor group; NaN where there are none. */
export function leaveOneOutNll(H: Float64Array, groups: StepGroups): Float64Array {
  const { bucketOf, bucketCount } = groups;
  const sum = new Float64Array(bucketCount);
  const count = new Int32Array(bucketCount);
  for (let k = 0; k < H.length; k++) {
    if (Number.isNaN(H[k])) continue;
    const b = intAt(bucketOf, k);
    sum[b] = at(sum, b) + at(H, k);
    count[b] = intAt(count, b) + 1;
  }
  const out = new Float64Array(H.length);
  for (let k = 0; k < H.length; k++) {
    const b = intAt(bucketOf, k);
    const hasOwn = !Number.isNaN(H[k]);
    const others = intAt(count, b) - (hasOwn ? 1 : 0);
    out[k] = others > 0 ? (at(sum, b) - (hasOwn ? at(H, k) : 0)) / others : NaN;
  }
  return out;
}
