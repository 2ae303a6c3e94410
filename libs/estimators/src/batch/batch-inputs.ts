import type { ColumnarBatch } from './columnar-batch';

/**
 * The parts of a batch beyond its shape, rewards and outcomes (which every method reads), that a
 * method may read. Each method declares its own (`MethodDefinition.inputs`), so that a producer
 * reading from storage can fetch only those columns; the rest it leaves as `withInputs` shows.
 *
 * - `state`, `action`: the per-group dictionary ids (`stateId`/`groupStateOffsets`, likewise
 *   for actions); `stateText`, `actionText`: the texts behind them (`stateTexts`, `actionTexts`);
 * - `nll`, `value`, `embedding`: the optional step fields;
 * - `bootstrap`: what a truncated trajectory's end names (`bootstrapStateId`, `bootstrapValue`).
 *
 * A text comes with its ids, and `bootstrap` with the state ids (its next state is one of them).
 */
export type BatchInput =
  'state' | 'stateText' | 'action' | 'actionText' | 'nll' | 'value' | 'embedding' | 'bootstrap';

export const ALL_BATCH_INPUTS: readonly BatchInput[] = [
  'state',
  'stateText',
  'action',
  'actionText',
  'nll',
  'value',
  'embedding',
  'bootstrap',
];

/**
 * `batch` as a producer that reads only `inputs` gives it: every other input left empty (ids 0 with
 * empty dictionaries, no texts, NaN values counted as missing from the first step, no embedding,
 * nothing to bootstrap from). A method run on it must give exactly what it gives on the whole batch
 * when `inputs` covers its declaration (checked for every method by the estimators' tests).
 */
export function withInputs(batch: ColumnarBatch, inputs: ReadonlySet<BatchInput>): ColumnarBatch {
  const n = batch.stepCount;
  const noIds = new Int32Array(n);
  const noOffsets = new Int32Array(batch.groupCount + 1);
  const missing = (x: Float64Array) => x.slice().fill(NaN);
  const firstMissing = { ...batch.firstMissing };
  if (!inputs.has('nll')) firstMissing.nll = 0;
  if (!inputs.has('value')) firstMissing.value = 0;
  if (!inputs.has('embedding')) firstMissing.embedding = 0;
  const state = inputs.has('state') || inputs.has('stateText') || inputs.has('bootstrap');
  const action = inputs.has('action') || inputs.has('actionText');
  const bootstrap = inputs.has('bootstrap');
  const embedding = inputs.has('embedding');
  return {
    ...batch,
    stateId: state ? batch.stateId : noIds,
    groupStateOffsets: state ? batch.groupStateOffsets : noOffsets,
    stateTexts: inputs.has('stateText') ? batch.stateTexts : [],
    actionId: action ? batch.actionId : noIds,
    groupActionOffsets: action ? batch.groupActionOffsets : noOffsets,
    actionTexts: inputs.has('actionText') ? batch.actionTexts : [],
    nll: inputs.has('nll') ? batch.nll : missing(batch.nll),
    value: inputs.has('value') ? batch.value : missing(batch.value),
    embedding: embedding ? batch.embedding : new Float32Array(0),
    embeddingDim: embedding ? batch.embeddingDim : 0,
    bootstrapStateId: bootstrap ? batch.bootstrapStateId : batch.bootstrapStateId.slice().fill(-1),
    bootstrapValue: bootstrap ? batch.bootstrapValue : missing(batch.bootstrapValue),
    firstMissing,
  };
}
