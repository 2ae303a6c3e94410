import { fieldsBeyondV1, type StepColumns, type StepPayload } from '@creditlab/events';
import type { CopyStep } from '../database/pipeline';
import { arrayBytes, BinaryCopyRows, type Int8Words } from './binary-copy-rows';
import { embeddingsAfter, type EmbeddingsInBody } from './event-body';
import type { TextDictionary, TextIdForms } from './text-dictionary';

/** The `step_slices` columns ingest writes, in the order of its COPY rows. */
export const STEP_SLICE_COLUMNS = [
  'run_id',
  'iteration',
  'group_ord',
  'traj_ord',
  'first_idx',
  'seq',
  'step_count',
  'state_id',
  'action_id',
  'reward',
  'nll',
  'token_logprobs',
  'embedding',
  'value',
  'next_state_id',
  'next_value',
  'extra',
  'embedding_at',
  'embedding_width',
];
/** A slice row's fixed-size fields: a uuid, five int4, the seq, and where its embeddings are. */
const FIXED_SLICE_BYTES = 16 + 5 * 4 + 8 + 2 * 4;
/** Arrays of 8-byte numbers per slice: state, action, reward, nll, value, next state, next value. */
const NUMBER_ARRAYS = 7;
/**
 * What one row's steps take at most, about: a longer slice becomes several rows. The table keeps rows
 * inline up to 8 kB (toast_tuple_target); a larger row would go to TOAST, and its number arrays through
 * pglz, which costs more than a second row. About 80 steps without vectors, 6 with 256-d embeddings; a
 * single step larger than this is a row of its own.
 */
export const ROW_TARGET_BYTES = 7000;
/** What a step's numbers take in a row: seven 8-byte values with their length words, and two vector length words. */
const STEP_NUMBER_BYTES = NUMBER_ARRAYS * 12 + 2 * 4;

/** Where a trajectory's rows go: the key columns before the step index. */
export interface TrajectoryPlace {
  iteration: number;
  groupOrd: number;
  ord: number;
}

/** Told of each row once written: where it goes, its trajectory's first step index in it, its bytes. */
export type OnSliceRow = (traj: TrajectoryPlace, first: number, row: Buffer) => void;

/** Steps `from` to `from + count` of an event's columns (the columnar form). */
export interface ColumnRange {
  columns: StepColumns;
  from: number;
}

/**
 * A chunk's `step_slices` rows for one binary COPY: one row per slice (the steps one event gives
 * one trajectory; a long slice in rows of about ROW_TARGET_BYTES), each step field an array with one element per step, whether
 * the steps came as objects or as columns; both give the same bytes for the same steps. Texts become
 * ids through the run's dictionary. An optional field no step of the row has is NULL as a whole. An
 * empty slice has no row (a later slice of the trajectory may start at its index).
 */
export class StepSliceRows {
  private readonly rows = new BinaryCopyRows();
  private readonly columnTextIds = new WeakMap<StepColumns, TextIdForms[]>();

  constructor(
    private readonly runIdBytes: Buffer,
    private readonly texts: TextDictionary,
    private readonly onRow?: OnSliceRow,
  ) {}

  /**
   * Steps sent as objects, the first at index `first` of their trajectory; their embeddings left in
   * the event's log body if `inBody` says where they are there (the first step's, event-body.ts):
   * each row then says where its own are (embedding_at, embedding_width).
   */
  objects(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    steps: StepPayload[],
    inBody: EmbeddingsInBody | null = null,
  ): void {
    const extras = steps.map(extraFieldsJson);
    const bytes = (i: number) => {
      const s = steps[i] as StepPayload;
      const embedding = inBody ? 0 : (s.embedding?.byteLength ?? 0);
      return (s.tokenLogprobs?.byteLength ?? 0) + embedding + extraBytes(extras[i]);
    };
    let j = 0;
    for (const { n, variableBytes } of rowsOf(steps.length, bytes)) {
      const rowSteps = steps.slice(j, j + n);
      const row = { steps: rowSteps, extras: extras.slice(j, j + n), variableBytes };
      this.objectRow(traj, first + j, seq, row, shifted(inBody, j));
      j += n;
    }
  }

  /** `count` steps of an event's columns, from index `first` of their trajectory: no object per step. */
  columns(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    range: ColumnRange,
    count: number,
    inBody: EmbeddingsInBody | null = null,
  ): void {
    const { columns: c, from } = range;
    const embedding = inBody ? undefined : c.embedding;
    const extra = c.extra;
    const bytes = (i: number) =>
      (c.tokenLogprobs?.[from + i]?.byteLength ?? 0) +
      (embedding?.[from + i]?.byteLength ?? 0) +
      extraBytes(extra?.[from + i] ?? undefined);
    let j = 0;
    for (const { n, variableBytes } of rowsOf(count, bytes)) {
      const rowRange = { columns: c, from: from + j };
      this.columnRow(traj, first + j, seq, rowRange, n, variableBytes, shifted(inBody, j));
      j += n;
    }
  }

  private objectRow(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    { steps, extras, variableBytes }: ObjectRow,
    inBody: EmbeddingsInBody | null,
  ): void {
    const n = steps.length;
    const step = (i: number) => steps[i] as StepPayload;
    this.start(traj, first, seq, n, variableBytes)
      .int8WordsArray(n, (i) => this.texts.id(step(i).state))
      .int8WordsArray(n, (i) => this.texts.id(step(i).action))
      .float8Array(n, (i) => step(i).reward);
    this.float8s(n, (i) => step(i).nll);
    this.vectors(n, (i) => float32Bytes(step(i).tokenLogprobs));
    if (inBody) this.rows.null();
    else this.vectors(n, (i) => float32Bytes(step(i).embedding));
    this.float8s(n, (i) => step(i).value);
    this.int8s(n, (i) => {
      const next = step(i).nextState;
      return next === undefined ? undefined : this.texts.id(next);
    });
    this.float8s(n, (i) => step(i).nextValue);
    if (extras.some((e) => e !== undefined)) this.rows.jsonbArray(n, (i) => extras[i]);
    else this.rows.null();
    this.embeddingsAt(inBody);
    this.onRow?.(traj, first, this.rows.lastRow());
  }

  private columnRow(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    { columns: c, from }: ColumnRange,
    count: number,
    variableBytes: number,
    inBody: EmbeddingsInBody | null,
  ): void {
    const ids = this.textIdsOf(c);
    this.start(traj, first, seq, count, variableBytes)
      .int8WordsArray(count, (i) => ids[c.state[from + i] as number])
      .int8WordsArray(count, (i) => ids[c.action[from + i] as number])
      .float8Array(count, (i) => c.reward[from + i]);
    const nll = c.nll;
    this.float8s(count, nll ? (i) => present(nll[from + i]) : undefined);
    this.vectors(count, (i) => float32Bytes(c.tokenLogprobs?.[from + i] ?? undefined));
    if (inBody) this.rows.null();
    else this.vectors(count, (i) => float32Bytes(c.embedding?.[from + i] ?? undefined));
    const value = c.value;
    this.float8s(count, value ? (i) => present(value[from + i]) : undefined);
    const nextState = c.nextState;
    this.int8s(
      count,
      nextState
        ? (i) => {
            const next = nextState[from + i] as number;
            return next < 0 ? undefined : ids[next];
          }
        : undefined,
    );
    const nextValue = c.nextValue;
    this.float8s(count, nextValue ? (i) => present(nextValue[from + i]) : undefined);
    const extra = c.extra;
    if (extra && someDefined(count, (i) => extra[from + i] ?? undefined))
      this.rows.jsonbArray(count, (i) => extra[from + i] ?? undefined);
    else this.rows.null();
    this.embeddingsAt(inBody);
    this.onRow?.(traj, first, this.rows.lastRow());
  }

  /** The COPY of the rows into `step_slices`, for the chunk's pipeline (pipeline.ts); none if no rows. */
  copyStep(): CopyStep | undefined {
    return this.rows.copyStep('step_slices', STEP_SLICE_COLUMNS);
  }

  /** A slice row's fields up to its step count; `variableBytes` bounds its vectors and extras. */
  private start(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    n: number,
    variableBytes: number,
  ) {
    const arrays = NUMBER_ARRAYS * arrayBytes(n, 8 * n) + 3 * arrayBytes(n, variableBytes);
    return this.rows
      .row(STEP_SLICE_COLUMNS.length, FIXED_SLICE_BYTES + arrays)
      .bytes(this.runIdBytes)
      .int4(traj.iteration)
      .int4(traj.groupOrd)
      .int4(traj.ord)
      .int4(first)
      .int8(seq)
      .int4(n);
  }

  /** An optional float8[]: NULL when no step has the field. */
  private float8s(n: number, get: ((i: number) => number | undefined) | undefined): void {
    if (get && someDefined(n, get)) this.rows.float8Array(n, get);
    else this.rows.null();
  }

  /** embedding_at and embedding_width: NULL unless the event's body holds the row's embeddings. */
  private embeddingsAt(inBody: EmbeddingsInBody | null): void {
    if (inBody) this.rows.int4(inBody.at).int4(inBody.width);
    else this.rows.null().null();
  }

  /** An optional int8[]: NULL when no step has the field. */
  private int8s(n: number, get: ((i: number) => Int8Words | undefined) | undefined): void {
    if (get && someDefined(n, get)) this.rows.int8WordsArray(n, get);
    else this.rows.null();
  }

  /** An optional bytea[] of vectors: NULL when no step has the field. */
  private vectors(n: number, get: (i: number) => Uint8Array | undefined): void {
    if (someDefined(n, get)) this.rows.byteaArray(n, get);
    else this.rows.null();
  }

  /** The text ids of an event's text table, each resolved once per event. */
  private textIdsOf(c: StepColumns): TextIdForms[] {
    let ids = this.columnTextIds.get(c);
    if (!ids) {
      ids = c.texts.map((t) => this.texts.id(t));
      this.columnTextIds.set(c, ids);
    }
    return ids;
  }
}

/**
 * The rows of a slice of `n` steps (ROW_TARGET_BYTES): how many steps each holds, and the bytes of
 * their vectors and extra fields (`variableBytes(i)` per step), which bound what the row takes.
 */
function rowsOf(
  n: number,
  variableBytes: (i: number) => number,
): { n: number; variableBytes: number }[] {
  const rows: { n: number; variableBytes: number }[] = [];
  let start = 0;
  let bytes = 0;
  let variable = 0;
  for (let i = 0; i < n; i++) {
    const v = variableBytes(i);
    if (i > start && bytes + STEP_NUMBER_BYTES + v > ROW_TARGET_BYTES) {
      rows.push({ n: i - start, variableBytes: variable });
      start = i;
      bytes = 0;
      variable = 0;
    }
    bytes += STEP_NUMBER_BYTES + v;
    variable += v;
  }
  if (n > start) rows.push({ n: n - start, variableBytes: variable });
  return rows;
}

/** One row's steps sent as objects, their fields beyond v1 as JSON, and what its vectors and extras take. */
interface ObjectRow {
  steps: StepPayload[];
  extras: (string | undefined)[];
  variableBytes: number;
}

/** Where the embeddings of a row starting `steps` after the slice's first step are. */
function shifted(inBody: EmbeddingsInBody | null, steps: number): EmbeddingsInBody | null {
  return inBody && embeddingsAfter(inBody, steps);
}

function someDefined(n: number, get: (i: number) => unknown): boolean {
  for (let i = 0; i < n; i++) if (get(i) !== undefined) return true;
  return false;
}

/** The step's fields beyond rollout-batch/v1, as JSON, when it has any. */
function extraFieldsJson(s: StepPayload): string | undefined {
  const extra = fieldsBeyondV1(s);
  if (!extra) return undefined;
  return JSON.stringify(Object.fromEntries(extra.map((key) => [key, s[key]])));
}

/** What a step's fields beyond v1 (as JSON) take in a row: a jsonb element's version byte and the text. */
const extraBytes = (json: string | undefined) =>
  json === undefined ? 0 : 1 + Buffer.byteLength(json);

/** A column's number, or undefined where the step has none (NaN in the columnar form). */
const present = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? undefined : x);

/** A float32 vector's bytes as stored (little-endian, the platform's order on every target we run). */
function float32Bytes(xs: Float32Array | undefined | null): Uint8Array | undefined {
  return xs ? new Uint8Array(xs.buffer, xs.byteOffset, xs.byteLength) : undefined;
}
