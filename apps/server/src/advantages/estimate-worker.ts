import {
  estimate,
  EstimatorInputError,
  type ColumnarBatch,
  type EstimateResult,
} from '@creditlab/estimators';
import { warmUpEstimators } from './estimator-warm-up';

export interface EstimateTask {
  batch: ColumnarBatch;
  method: string;
  params: Record<string, unknown>;
}

export type EstimateReply =
  { ok: true; result: EstimateResult; ms: number } | { ok: false; code: string; message: string };

/** Runs in a worker thread: one estimator on one batch, bad input reported as data (errors do not cross threads intact). */
export default function runEstimate(task: EstimateTask): EstimateReply {
  const t0 = performance.now();
  try {
    const result = estimate(task.batch, task.method, task.params);
    return { ok: true, result, ms: performance.now() - t0 };
  } catch (e) {
    if (e instanceof EstimatorInputError) return { ok: false, code: e.code, message: e.message };
    throw e;
  }
}

// Compiled before the first task rather than during it (the pool starts its threads at boot).
warmUpEstimators();
