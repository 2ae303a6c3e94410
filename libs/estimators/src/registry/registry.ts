import type { BatchInput } from '../batch/batch-inputs';
import { locateStep, type ColumnarBatch, type StepField } from '../batch/columnar-batch';
import { EstimatorInputError } from '../errors';
import { bipace } from '../methods/bipace';
import { gaca } from '../methods/gaca';
import { gagpo } from '../methods/gagpo';
import { gatedBepo } from '../methods/gated-bepo';
import { gigpo } from '../methods/gigpo';
import { grpo } from '../methods/grpo';
import { ppoGae } from '../methods/ppo-gae';
import { reinforce } from '../methods/reinforce';
import { rloo } from '../methods/rloo';
import type { MethodDefinition, MethodOutput, MethodSummary } from './method';
import { resolveParams, type ParamSchema } from './param-schema';

const METHOD_LIST = [reinforce, grpo, rloo, ppoGae, gigpo, gaca, gatedBepo, gagpo, bipace] as const;

export type MethodName = (typeof METHOD_LIST)[number]['name'];
export type AnyMethod = MethodDefinition<ParamSchema>;

export const METHOD_NAMES = METHOD_LIST.map((m) => m.name) as readonly MethodName[];

/** How a message names a step field a method needs (the server's export check names it the same way). */
export const FIELD_HINT: Record<StepField, string> = {
  nll: '"nll" (or "tokenLogprobs")',
  value: '"value"',
  embedding: '"embedding"',
};

/** Name → definition; registering a name twice is a programming error. */
function buildRegistry(methods: readonly AnyMethod[]): ReadonlyMap<string, AnyMethod> {
  const map = new Map<string, AnyMethod>();
  for (const m of methods) {
    if (map.has(m.name)) throw new Error(`estimator "${m.name}" registered twice`);
    map.set(m.name, m);
  }
  return map;
}

const REGISTRY = buildRegistry(METHOD_LIST as unknown as readonly AnyMethod[]);

export function listMethods(): readonly AnyMethod[] {
  return [...REGISTRY.values()];
}

export function getMethod(name: string): AnyMethod {
  const method = REGISTRY.get(name);
  if (!method) {
    throw new EstimatorInputError(
      'UNKNOWN_METHOD',
      `unknown method ${JSON.stringify(name)}; known methods: ${METHOD_NAMES.join(', ')}`,
    );
  }
  return method;
}

/** The result of one estimator on one batch: what advantages/v1 serialises. */
export interface EstimateResult extends MethodOutput {
  method: string;
  version: string;
  /** Every parameter after defaults, in the registry's order. */
  params: Record<string, unknown>;
  summary: MethodSummary;
}

/**
 * Runs `method` on `batch` with `params` (defaults applied, validated), after
 * checking that the batch carries every step field the method needs.
 */
export function estimate(
  batch: ColumnarBatch,
  methodName: string,
  params: Readonly<Record<string, unknown>> = {},
): EstimateResult {
  const method = getMethod(methodName);
  const resolved = resolveParams(method.name, method.params, params);
  for (const field of method.requires) {
    const missing = batch.firstMissing[field];
    if (missing >= 0) {
      throw new EstimatorInputError(
        'MISSING_FIELD',
        `method "${method.name}" needs ${FIELD_HINT[field]} on every step; this step has none`,
        locateStep(batch, missing),
      );
    }
  }
  const out = method.estimate(batch, resolved);
  // Every input is finite, yet a large parameter or reward can overflow on the way, or give an
  // advantage beyond float32, which the server and the trainer store and train on: refused here,
  // so that no caller stores, serves or trains on an infinite advantage.
  const overflow = firstBeyondFloat32(out.advantages);
  if (overflow >= 0) {
    const a = out.advantages[overflow] as number;
    throw new EstimatorInputError(
      'NON_FINITE_RESULT',
      `method "${method.name}" gives this step ${Number.isFinite(a) ? `an advantage beyond float32's range (${a})` : `a non-finite advantage (${a})`}: a parameter or reward is too large for the arithmetic; use smaller values`,
      locateStep(batch, overflow),
    );
  }
  return { method: method.name, version: method.version, params: { ...resolved }, ...out };
}

/**
 * The index of the first value that is not finite once rounded to float32, or −1. A plain loop:
 * a typed array's findIndex calls its callback through a builtin V8 does not inline, and made
 * REINFORCE five times as slow with this check (2.7 ms on 100k steps against 0.55, bench:estimators).
 */
function firstBeyondFloat32(values: Float64Array): number {
  for (let i = 0; i < values.length; i++)
    if (!Number.isFinite(Math.fround(values[i] as number))) return i;
  return -1;
}

/** What `methodName` reads of a batch with `params` (defaults applied): see batch-inputs.ts. */
export function methodInputs(
  methodName: string,
  params: Readonly<Record<string, unknown>> = {},
): ReadonlySet<BatchInput> {
  const method = getMethod(methodName);
  return new Set(method.inputs(resolveParams(method.name, method.params, params)));
}
