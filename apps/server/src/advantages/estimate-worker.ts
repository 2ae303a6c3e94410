import {
  estimate,
  EstimatorInputError,
  getMethod,
  type ColumnarBatch,
  type MethodSummary,
} from '@creditlab/estimators';
import { encodeDiagnostics, packFloat32Array, type StoredDiagnostics } from './advantage-codec';
import { warmUpEstimators } from './estimator-warm-up';

/** One method on several batches: one hand-over to a thread and back for all of them. */
export interface EstimateTask {
  batches: ColumnarBatch[];
  method: string;
  params: Record<string, unknown>;
  /** Whether to send the diagnostics back (a recompute job does not store them). */
  diagnostics: boolean;
}

/** An estimate as it is stored: float32 advantages and diagnostics, packed here, off the event loop. */
export interface PackedEstimate {
  /** Little-endian float32 (a Buffer in the worker, a Uint8Array once it has crossed threads). */
  advantages: Uint8Array;
  diagnostics: (Omit<StoredDiagnostics, 'values'> & { values: Uint8Array }) | null;
  summary: MethodSummary;
  /** The estimator's own time. */
  ms: number;
}

export type EstimateReply =
  ({ ok: true } & PackedEstimate) | { ok: false; code: string; message: string };

/** Runs in a worker thread: the task's batches one after the other, each reply in their order. */
export default function runEstimates(task: EstimateTask): EstimateReply[] {
  return task.batches.map((batch) =>
    runEstimate(batch, task.method, task.params, task.diagnostics),
  );
}

/** One estimator on one batch, bad input reported as data (errors do not cross threads intact). */
function runEstimate(
  batch: ColumnarBatch,
  method: string,
  params: Record<string, unknown>,
  withDiagnostics: boolean,
): EstimateReply {
  const t0 = performance.now();
  try {
    const result = estimate(batch, method, params);
    const ms = performance.now() - t0;
    const kinds = new Map(getMethod(method).diagnostics.map((d) => [d.name, d.kind]));
    return {
      ok: true,
      advantages: packFloat32Array(result.advantages),
      diagnostics: withDiagnostics
        ? encodeDiagnostics(result.diagnostics, kinds, batch.stepCount)
        : null,
      summary: result.summary,
      ms,
    };
  } catch (e) {
    if (e instanceof EstimatorInputError) return { ok: false, code: e.code, message: e.message };
    throw e;
  }
}

// Compiled before the first task rather than during it (the pool starts its threads at boot).
warmUpEstimators();
