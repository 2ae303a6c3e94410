import { trajectoryStepRange, type ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

/**
 * The one backward scan of the library (docs/estimators.md §1.3), with c_t = `batch.continues`:
 *   y_t = x_t + f·c_t·y_{t+1}
 * so the sum is cut at each trajectory's end and nowhere else.
 */
export function discountedScan(batch: ColumnarBatch, x: Float64Array, f: number): Float64Array {
  const y = new Float64Array(batch.stepCount);
  const { continues } = batch;
  let acc = 0;
  for (let k = batch.stepCount - 1; k >= 0; k--) {
    acc = at(x, k) + (continues[k] ? f * acc : 0);
    y[k] = acc;
  }
  return y;
}

/** Discounted reward-to-go, no bootstrap at the end: g_t = r_t + γ·c_t·g_{t+1}. */
export function rewardToGo(batch: ColumnarBatch, gamma: number): Float64Array {
  return discountedScan(batch, batch.reward, gamma);
}

/** GAE over TD residuals δ: A_t = δ_t + γλ·c_t·A_{t+1}. */
export function gaeScan(
  batch: ColumnarBatch,
  delta: Float64Array,
  gammaLambda: number,
): Float64Array {
  return discountedScan(batch, delta, gammaLambda);
}

/**
 * TD residuals δ_t = r_t + γ·V'_t − V_t (§1.3), where V'_t is the value of step t's successor,
 * `successorValue[k]`, inside a trajectory, and 0 at its end (a terminal node) unless
 * `bootstrapTruncated`: then a truncated end takes its successor's value (0 if there is none,
 * NaN). Every other end has no successor value, so it stays 0 either way.
 */
export function tdResiduals(
  batch: ColumnarBatch,
  value: Float64Array,
  successorValue: Float64Array,
  gamma: number,
  bootstrapTruncated: boolean,
): Float64Array {
  const delta = new Float64Array(batch.stepCount);
  const { reward, continues } = batch;
  for (let k = 0; k < batch.stepCount; k++) {
    const next = at(successorValue, k);
    const bootstrap = continues[k] || (bootstrapTruncated && !Number.isNaN(next));
    delta[k] = at(reward, k) + gamma * (bootstrap ? next : 0) - at(value, k);
  }
  return delta;
}

/** Per step, `valueOfState[ids[k]]`; NaN where the id is −1 (no state). */
export function valuesAt(valueOfState: Float64Array, ids: Int32Array): Float64Array {
  const out = new Float64Array(ids.length);
  for (let k = 0; k < ids.length; k++) {
    const id = intAt(ids, k);
    out[k] = id < 0 ? NaN : at(valueOfState, id);
  }
  return out;
}

/** Undiscounted episode return R_i = Σ_t r_{i,t}, one per trajectory. */
export function episodeReturns(batch: ColumnarBatch): Float64Array {
  const R = new Float64Array(batch.trajectoryCount);
  const { reward } = batch;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    const [lo, hi] = trajectoryStepRange(batch, i);
    let sum = 0;
    for (let k = lo; k < hi; k++) sum += at(reward, k);
    R[i] = sum;
  }
  return R;
}

/** Copies one value per trajectory onto each of its steps. */
export function broadcastToSteps(batch: ColumnarBatch, perTrajectory: Float64Array): Float64Array {
  const out = new Float64Array(batch.stepCount);
  for (let i = 0; i < batch.trajectoryCount; i++) {
    out.fill(at(perTrajectory, i), ...trajectoryStepRange(batch, i));
  }
  return out;
}
