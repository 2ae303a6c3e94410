import type { ColumnarBatch } from '../batch/columnar-batch';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

/**
 * Discounted reward-to-go per step, no bootstrap (docs/estimators.md §1.3):
 * g_T = r_T, g_t = r_t + γ·g_{t+1}.
 */
export function rewardToGo(batch: ColumnarBatch, gamma: number): Float64Array {
  const g = new Float64Array(batch.stepCount);
  const { reward, trajectoryStepOffsets: off } = batch;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    let acc = 0;
    for (let k = intAt(off, i + 1) - 1; k >= intAt(off, i); k--) {
      acc = at(reward, k) + gamma * acc;
      g[k] = acc;
    }
  }
  return g;
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

/**
 * Backward GAE scan along each trajectory: A_T = δ_T, A_t = δ_t + γλ·A_{t+1}.
 * The trajectory end is the only place the trace is cut (the "continues" factor
 * is 0 there and 1 elsewhere), so termination lives in this one loop.
 */
export function gaeScan(
  batch: ColumnarBatch,
  delta: Float64Array,
  gammaLambda: number,
): Float64Array {
  const A = new Float64Array(batch.stepCount);
  const off = batch.trajectoryStepOffsets;
  for (let i = 0; i < batch.trajectoryCount; i++) {
    let acc = 0;
    for (let k = intAt(off, i + 1) - 1; k >= intAt(off, i); k--) {
      acc = at(delta, k) + gammaLambda * acc;
      A[k] = acc;
    }
  }
  return A;
}
