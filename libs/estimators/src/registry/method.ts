import type { BatchInput } from '../batch/batch-inputs';
import type { ColumnarBatch, StepField } from '../batch/columnar-batch';
import type { ParamSchema, ResolvedParams } from './param-schema';

/** How a per-step diagnostic array is written out (NaN is written as null). */
export type DiagnosticKind = 'number' | 'integer' | 'boolean';

export interface DiagnosticSpec {
  name: string;
  kind: DiagnosticKind;
  description: string;
}

/** Batch-level facts a method reports beside its per-step arrays (singleton rate, iterations, ...). */
export type MethodSummary = Record<string, number | boolean | number[]>;

/** What every estimator returns: one advantage per step in canonical order, plus diagnostics. */
export interface MethodOutput {
  advantages: Float64Array;
  diagnostics: Record<string, Float64Array | Int32Array | Uint8Array>;
  summary: MethodSummary;
}

/** A registered estimator: its identity, its parameter schema, and one pure function. */
export interface MethodDefinition<S extends ParamSchema = ParamSchema> {
  name: string;
  /** Bumped whenever the numbers a method produces for the same input and params change. */
  version: string;
  description: string;
  paper: string;
  params: S;
  /** Optional step fields the method cannot do without. */
  requires: readonly StepField[];
  /**
   * Which parts of a batch beyond shape, rewards and outcomes `estimate` reads with these
   * parameters: a reader may leave the others out (batch-inputs.ts).
   */
  inputs(params: ResolvedParams<S>): readonly BatchInput[];
  diagnostics: readonly DiagnosticSpec[];
  estimate(batch: ColumnarBatch, params: ResolvedParams<S>): MethodOutput;
}

/** Identity function that ties a definition's `estimate` to its own schema's types. */
export function defineMethod<const S extends ParamSchema>(
  def: MethodDefinition<S>,
): MethodDefinition<S> {
  return def;
}
