import type { ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

/**
 * The one backward scan of the library (docs/estimators.md §1.3), trajectory by trajectory:
 *   y_T = x_T,   y_t = x_t + f·y_{t+1}   (t < T)
 * so the sum is cut at each trajectory's end and nowhere else.
 */
export function discountedScan(batch: ColumnarBatch, x: Float64Array, f: number): Float64Array {
  const y = new Float64Array(batch.stepCount);
  const off = batch.trajectoryStepOffsets;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    let acc = 0;
    for (let k = intAt(off, i + 1) - 1; k >= intAt(off, i); k--) {
      acc = at(x, k) + f * acc;
      y[k] = acc;
    }
  }
  return y;
}

/** Discounted reward-to-go, no bootstrap at the end: g_T = r_T, g_t = r_t + γ·g_{t+1}. */
export function rewardToGo(batch: ColumnarBatch, gamma: number): Float64Array {
  return discountedScan(batch, batch.reward, gamma);
}

/** GAE over TD residuals δ: A_T = δ_T, A_t = δ_t + γλ·A_{t+1}. */
export function gaeScan(
  batch: ColumnarBatch,
  delta: Float64Array,
  gammaLambda: number,
): Float64Array {
  return discountedScan(batch, delta, gammaLambda);
}

/**
 * TD residuals (§1.3), trajectory by trajectory, with V the value of each step's state:
 *   δ_t = r_t + γ·V_{t+1} − V_t   (t < T)
 *   δ_T = r_T + γ·b − V_T,   b = 0 (a terminal node), or with `bootstrap` (one per trajectory,
 *         see the batch's `bootstrapValue`) the trajectory's entry when it is a number
 */
export function tdResiduals(
  batch: ColumnarBatch,
  value: Float64Array,
  bootstrap: Float64Array | null,
  gamma: number,
): Float64Array {
  const { reward, trajectoryStepOffsets: off } = batch;
  const delta = new Float64Array(batch.stepCount);
  for (let i = 0; i < batch.trajectoryCount; i++) {
    const last = intAt(off, i + 1) - 1;
    for (let k = intAt(off, i); k < last; k++) {
      delta[k] = at(reward, k) + gamma * at(value, k + 1) - at(value, k);
    }
    const b = bootstrap ? numberOrZero(at(bootstrap, i)) : 0;
    delta[last] = at(reward, last) + gamma * b - at(value, last);
  }
  return delta;
}

const numberOrZero = (x: number): number => (Number.isNaN(x) ? 0 : x);

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
  const { reward, trajectoryStepOffsets: off } = batch;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    let sum = 0;
    for (let k = intAt(off, i); k < intAt(off, i + 1); k++) sum += at(reward, k);
    R[i] = sum;
  }
  return R;
}

/** Copies one value per trajectory onto each of its steps. */
export function broadcastToSteps(batch: ColumnarBatch, perTrajectory: Float64Array): Float64Array {
  const out = new Float64Array(batch.stepCount);
  const off = batch.trajectoryStepOffsets;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    out.fill(at(perTrajectory, i), intAt(off, i), intAt(off, i + 1));
  }
  return out;
}
