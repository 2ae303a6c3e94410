import { STEP_FIELDS, type StepColumns, type StepPayload } from '@creditlab/events';
import type pg from 'pg';
import { BinaryCopyRows } from './binary-copy-rows';
import type { TextDictionary } from './text-dictionary';

/** The `steps` columns ingest writes, in the order of its COPY rows. */
export const STEP_COLUMNS = [
  'run_id',
  'iteration',
  'group_ord',
  'traj_ord',
  'idx',
  'seq',
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
];
/** What a step row's fixed-size fields take in a binary COPY: a uuid, four int4, eight 8-byte values. */
const FIXED_STEP_ROW_BYTES = 16 + 4 * 4 + 8 * 8;

/** Where a trajectory's rows go: the key columns before the step index. */
export interface TrajectoryPlace {
  iteration: number;
  groupOrd: number;
  ord: number;
}

/** Steps `from` to `from + count` of an event's columns (the columnar form). */
export interface ColumnRange {
  columns: StepColumns;
  from: number;
}

/**
 * A chunk's `steps` rows for one binary COPY, from steps sent as objects or as columns; both give
 * the same bytes for the same step. Texts become ids through the run's dictionary.
 */
export class StepRows {
  private readonly rows = new BinaryCopyRows();
  private readonly columnTextIds = new WeakMap<StepColumns, bigint[]>();

  constructor(
    private readonly runIdBytes: Buffer,
    private readonly texts: TextDictionary,
  ) {}

  /** One step sent as an object, at index `idx` of its trajectory. */
  step(traj: TrajectoryPlace, idx: number, seq: number, s: StepPayload): void {
    const extra = extraFieldsJson(s);
    const vectorBytes = (s.tokenLogprobs?.byteLength ?? 0) + (s.embedding?.byteLength ?? 0);
    const extraBytes = extra === undefined ? 0 : 1 + Buffer.byteLength(extra);
    this.start(traj, idx, seq, vectorBytes + extraBytes)
      .int8(this.texts.id(s.state))
      .int8(this.texts.id(s.action))
      .float8(s.reward)
      .float8(s.nll)
      .bytes(float32Bytes(s.tokenLogprobs))
      .bytes(float32Bytes(s.embedding))
      .float8(s.value)
      .int8(s.nextState === undefined ? undefined : this.texts.id(s.nextState))
      .float8(s.nextValue)
      .jsonb(extra);
  }

  /** `count` steps of an event's columns, from index `first` of their trajectory: no object per step. */
  columns(
    traj: TrajectoryPlace,
    first: number,
    seq: number,
    { columns: c, from }: ColumnRange,
    count: number,
  ): void {
    const ids = this.textIdsOf(c);
    for (let j = 0; j < count; j++) {
      const i = from + j;
      const embedding = c.embedding?.[i] ?? undefined;
      const logprobs = c.tokenLogprobs?.[i] ?? undefined;
      const next = c.nextState?.[i] ?? -1;
      this.start(traj, first + j, seq, (logprobs?.byteLength ?? 0) + (embedding?.byteLength ?? 0))
        .int8(ids[c.state[i] as number])
        .int8(ids[c.action[i] as number])
        .float8(c.reward[i])
        .float8(present(c.nll?.[i]))
        .bytes(float32Bytes(logprobs))
        .bytes(float32Bytes(embedding))
        .float8(present(c.value?.[i]))
        .int8(next < 0 ? undefined : ids[next])
        .float8(present(c.nextValue?.[i]))
        .null();
    }
  }

  /** Streams the rows into `steps` (inside the caller's transaction). */
  copyInto(client: pg.PoolClient): Promise<void> {
    return this.rows.copyInto(client, 'steps', STEP_COLUMNS);
  }

  /** A row's key fields, up to its seq; `variableBytes` bounds its vectors and extra fields. */
  private start(traj: TrajectoryPlace, idx: number, seq: number, variableBytes: number) {
    return this.rows
      .row(STEP_COLUMNS.length, FIXED_STEP_ROW_BYTES + variableBytes)
      .bytes(this.runIdBytes)
      .int4(traj.iteration)
      .int4(traj.groupOrd)
      .int4(traj.ord)
      .int4(idx)
      .int8(seq);
  }

  /** The text ids of an event's text table, each resolved once per event. */
  private textIdsOf(c: StepColumns): bigint[] {
    let ids = this.columnTextIds.get(c);
    if (!ids) {
      ids = c.texts.map((t) => this.texts.id(t));
      this.columnTextIds.set(c, ids);
    }
    return ids;
  }
}

/** The step's fields beyond rollout-batch/v1, as JSON, when it has any. */
function extraFieldsJson(s: StepPayload): string | undefined {
  const extra = Object.keys(s).filter((key) => !STEP_FIELDS.has(key));
  if (extra.length === 0) return undefined;
  return JSON.stringify(Object.fromEntries(extra.map((key) => [key, s[key]])));
}

/** A column's number, or undefined where the step has none (NaN in the columnar form). */
const present = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? undefined : x);

/** A float32 vector's bytes as stored (little-endian, the platform's order on every target we run). */
function float32Bytes(xs: Float32Array | undefined): Uint8Array | undefined {
  return xs === undefined ? undefined : new Uint8Array(xs.buffer, xs.byteOffset, xs.byteLength);
}
