import type { BatchInput, ColumnarBatch, Outcome } from '@creditlab/estimators';
import type { TupleFields } from './binary-copy';
import { layoutOf, type StepColumns, type TextIds } from './iteration-columns';
import type { TrajectoryShape } from './trajectory-shape';

/**
 * The encoding of `iteration_columns` (migrations/20261204000000_iteration_columns): a row of
 * another format is ignored and rewritten. Every number is little-endian, as typed arrays hold them
 * on the machines Node runs on (x64, arm64), so packing and unpacking are plain copies.
 *
 * n steps, G groups, T trajectories with steps (the batch's), K distinct texts over all groups:
 * - reward: float64 × n
 * - states, actions: dictionary id int32 × n (batch-wide, as ColumnarBatch numbers them), group
 *   offsets int32 × (G + 1), then per dictionary id its stored text id as two int32 (high, low)
 * - nll, value: first step lacking it int32 (−1: none), float64 × n (NaN where absent)
 * - bootstrap: bootstrap state id int32 × T, bootstrap value float64 × T
 *
 * No embeddings (migrations/20261210000000_iteration_columns_without_embeddings): a third copy of
 * every vector, after the log's and the step slices', cost every run with embeddings a third more
 * WAL and storage per step at ingest, for the one method that reads them (BiPACE), which reads the
 * step slices instead.
 */
export const PACKED_FORMAT = 1;

/** The columns of iteration_columns in the order a read fetches them (after `iteration`). */
export const PACKED_COLUMNS = ['reward', 'states', 'actions', 'nll', 'value', 'bootstrap'] as const;

/**
 * What a packed row holds: every input but the texts (it keeps text ids; readers fetch texts by
 * them) and the embeddings (see above).
 */
export const PACKED_INPUTS: ReadonlySet<BatchInput> = new Set([
  'state',
  'action',
  'nll',
  'value',
  'bootstrap',
]);

/** Whether packed rows hold all that a method reads (else it reads the step slices). */
export const packedServes = (inputs: ReadonlySet<BatchInput>): boolean => !inputs.has('embedding');

/** One iteration_columns row's values, ready to insert. */
export interface PackedIteration {
  iteration: number;
  inputsSeq: number;
  shape: [string, string, number, number, Outcome, number][];
  columns: Record<(typeof PACKED_COLUMNS)[number], Buffer>;
}

const bytes = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
const int32 = (...xs: number[]) => bytes(Int32Array.from(xs));

/** The text ids of a dictionary, interleaved (high, low), one pair per batch-wide id. */
function textIdPairs(ids: TextIds): Int32Array {
  const out = new Int32Array(2 * ids.idsHi.length);
  for (let i = 0; i < ids.idsHi.length; i++) {
    out[2 * i] = ids.idsHi[i] as number;
    out[2 * i + 1] = ids.idsLo[i] as number;
  }
  return out;
}

/** Packs a batch read with every input but texts, and the text ids behind its dictionary ids. */
export function packIteration(
  iteration: number,
  inputsSeq: number,
  shape: TrajectoryShape[],
  batch: ColumnarBatch,
  textIds: { states: TextIds; actions: TextIds },
): PackedIteration {
  const b = batch;
  const missing = b.firstMissing;
  return {
    iteration,
    inputsSeq,
    shape: shape.map((t) => [
      t.groupId,
      t.trajectoryId,
      t.groupOrd,
      t.trajOrd,
      t.outcome,
      t.length,
    ]),
    columns: {
      reward: bytes(b.reward),
      states: Buffer.concat([
        bytes(b.stateId),
        bytes(b.groupStateOffsets),
        bytes(textIdPairs(textIds.states)),
      ]),
      actions: Buffer.concat([
        bytes(b.actionId),
        bytes(b.groupActionOffsets),
        bytes(textIdPairs(textIds.actions)),
      ]),
      nll: Buffer.concat([int32(missing.nll), bytes(b.nll)]),
      value: Buffer.concat([int32(missing.value), bytes(b.value)]),
      bootstrap: Buffer.concat([bytes(b.bootstrapStateId), bytes(b.bootstrapValue)]),
    },
  };
}

/** The shape as a packed row holds it, with each trajectory's offset in canonical order. */
export function unpackShape(rows: PackedIteration['shape']): TrajectoryShape[] {
  let offset = 0;
  return rows.map(([groupId, trajectoryId, groupOrd, trajOrd, outcome, length]) => {
    const t = { groupId, trajectoryId, groupOrd, trajOrd, outcome, length, offset };
    offset += length;
    return t;
  });
}

type ArrayOf<T> = { new (n: number): T; BYTES_PER_ELEMENT: number };

/** `count` elements at byte `from` of a field, copied into an aligned typed array. */
function take<T extends Int32Array | Float64Array | Float32Array>(
  Ctor: ArrayOf<T>,
  buf: Buffer,
  from: number,
  count: number,
): T {
  const out = new Ctor(count);
  new Uint8Array(out.buffer).set(buf.subarray(from, from + count * Ctor.BYTES_PER_ELEMENT));
  return out;
}

/** Refuses a field whose length is not what the iteration's shape implies (a damaged row). */
function checkLength(f: TupleFields, field: number, bytes: number): void {
  if (f.length[field] !== bytes)
    throw new Error(
      `packed column ${PACKED_COLUMNS[field - 1]} holds ${f.length[field]} bytes where its iteration needs ${bytes}`,
    );
}

/** A dictionary column (states or actions): ids, group offsets, text ids. */
function unpackDictionary(f: TupleFields, field: number, n: number, groups: number) {
  const at = f.start[field] as number;
  const ids = take(Int32Array, f.buf, at, n);
  const offsets = take(Int32Array, f.buf, at + 4 * n, groups + 1);
  const texts = offsets[groups] as number;
  checkLength(f, field, 4 * (n + groups + 1) + 8 * texts);
  const pairs = take(Int32Array, f.buf, at + 4 * (n + groups + 1), 2 * texts);
  const textIds: TextIds = { idsHi: [], idsLo: [] };
  for (let i = 0; i < pairs.length; i += 2) {
    textIds.idsHi.push(pairs[i] as number);
    textIds.idsLo.push(pairs[i + 1] as number);
  }
  return { ids, offsets, textIds };
}

/** A column of a first-missing index and float64 per step (nll, value). */
function unpackOptional(f: TupleFields, field: number, n: number) {
  checkLength(f, field, 4 + 8 * n);
  const at = f.start[field] as number;
  return { missing: f.buf.readInt32LE(at), values: take(Float64Array, f.buf, at + 4, n) };
}

/**
 * The batch a packed row holds, with what `columns` does not read left as the steps reader leaves it
 * (zero ids, NaN, empty embeddings, missing from step 0), so that both readers give equal batches;
 * `columns` must not read embeddings (packedServes).
 * Texts are empty: the caller fills them from the text ids when the method reads them.
 */
export function unpackIteration(
  f: TupleFields,
  shape: TrajectoryShape[],
  columns: StepColumns,
): { build(stateTexts: string[], actionTexts: string[]): ColumnarBatch } & Record<
  'states' | 'actions',
  TextIds
> {
  const l = layoutOf(shape);
  const groups = l.groupIds.length;
  const trajectories = l.trajectoryIds.length;
  const n = l.trajectoryStepOffsets[trajectories] as number;
  const none = { ids: new Int32Array(n), offsets: new Int32Array(groups + 1) };
  const noTexts: TextIds = { idsHi: [], idsLo: [] };
  const states = columns.state ? unpackDictionary(f, 2, n, groups) : { ...none, textIds: noTexts };
  const actions = columns.action
    ? unpackDictionary(f, 3, n, groups)
    : { ...none, textIds: noTexts };
  const absent = { missing: 0, values: new Float64Array(n).fill(NaN) };
  const nll = columns.nllAt >= 0 ? unpackOptional(f, 4, n) : absent;
  const value =
    columns.valueAt >= 0 ? unpackOptional(f, 5, n) : { ...absent, values: absent.values.slice() };
  if (columns.embeddingAt >= 0) throw new Error('packed rows hold no embeddings');
  const bootstrap = unpackBootstrap(f, trajectories, columns.nextAt >= 0);
  checkLength(f, 1, 8 * n);
  const reward = take(Float64Array, f.buf, f.start[1] as number, n);
  return {
    states: states.textIds,
    actions: actions.textIds,
    build: (stateTexts, actionTexts) => ({
      groupCount: groups,
      trajectoryCount: trajectories,
      stepCount: n,
      ...l,
      reward,
      stateId: states.ids,
      groupStateOffsets: states.offsets,
      stateTexts,
      actionId: actions.ids,
      groupActionOffsets: actions.offsets,
      actionTexts,
      bootstrapStateId: bootstrap.stateId,
      bootstrapValue: bootstrap.value,
      nll: nll.values,
      value: value.values,
      embedding: new Float32Array(0),
      embeddingDim: 0,
      firstMissing: { nll: nll.missing, value: value.missing, embedding: 0 },
    }),
  };
}

function unpackBootstrap(f: TupleFields, trajectories: number, read: boolean) {
  if (!read)
    return {
      stateId: new Int32Array(trajectories).fill(-1),
      value: new Float64Array(trajectories).fill(NaN),
    };
  checkLength(f, 6, 12 * trajectories);
  const at = f.start[6] as number;
  return {
    stateId: take(Int32Array, f.buf, at, trajectories),
    value: take(Float64Array, f.buf, at + 4 * trajectories, trajectories),
  };
}
