import { z } from 'zod';
import {
  Base64Arena,
  decodeBase64,
  firstNonFinite,
  float32View,
  float64Values,
} from './base64-numbers';
import { canonicalJson } from './event-body-hash';
import { MAX_INT32, STEP_FIELDS } from './event-schemas';
import { findUnstorable, MAX_JSON_DEPTH } from './storable-json';

/**
 * The columnar form of `rollouts.appended` (docs/events.md, "Columnar rollouts"): the event's steps
 * as one set of columns instead of one JSON object per step — the form the log stores. Trajectories
 * name how many steps they have (`stepCount`) and take consecutive runs of the columns, in the
 * order the event names them. Numbers are base64 little-endian float64, vectors base64
 * little-endian float32 (one string per step, or null), states and actions indices into `texts`.
 */
export interface WireStepColumns {
  texts: string[];
  state: number[];
  action: number[];
  reward: string;
  /** NaN where a step has none. */
  nll?: string;
  value?: string;
  nextValue?: string;
  /** A text index, or −1 where the step has no next state. */
  nextState?: number[];
  tokenLogprobs?: (string | null)[];
  embedding?: (string | null)[];
  /** A step's fields beyond rollout-batch/v1 as an object, or null where it has none. */
  extra?: (Record<string, unknown> | null)[];
}

/** The columns after validation: decoded into typed arrays, with the wire form kept for the log. */
export interface StepColumns {
  n: number;
  texts: string[];
  state: Int32Array;
  action: Int32Array;
  reward: Float64Array;
  nll?: Float64Array;
  value?: Float64Array;
  nextValue?: Float64Array;
  nextState?: Int32Array;
  tokenLogprobs?: (Float32Array | null)[];
  embedding?: (Float32Array | null)[];
  /**
   * A step's fields beyond rollout-batch/v1 as canonical JSON (keys sorted: the log's body holds it,
   * and the body is a digest's input), or null where it has none.
   */
  extra?: (string | null)[];
  /**
   * The columns as sent, which the log's body is made of; left behind once it is made when the event
   * is prepared for the ingest's second thread (only the decoded columns cross back).
   */
  wire?: WireStepColumns;
  /**
   * Set when the server made these columns of steps its client sent as objects (the server's
   * `stepsAsColumns`, after the log's body and digest were made of the objects): a refusal then names
   * a step by its place in its trajectory, as the client wrote it, and a retry is compared as objects.
   */
  sentAsSteps?: true;
}

const key = z.string().min(1).max(512);

/** The event's data apart from its columns (zod: per trajectory, never per step). */
export const columnarRolloutsSkeleton = z.strictObject({
  iteration: z.number().int().min(0).max(MAX_INT32),
  groups: z.array(
    z.strictObject({
      id: key,
      trajectories: z.array(
        z.strictObject({
          id: key,
          outcome: z.enum(['success', 'failure', 'truncated']).optional(),
          stepCount: z.number().int().min(0).max(MAX_INT32),
        }),
      ),
    }),
  ),
  columns: z.unknown(),
});

export type ColumnarRolloutsData = Omit<z.output<typeof columnarRolloutsSkeleton>, 'columns'> & {
  columns: StepColumns;
};

/** A column's problem: its path below `data.columns` and what is wrong. */
export class ColumnIssue extends Error {
  constructor(
    readonly path: PropertyKey[],
    message: string,
  ) {
    super(message);
  }
}

export const NUMBER_COLUMNS = ['reward', 'nll', 'value', 'nextValue'] as const;
const INDEX_COLUMNS = ['state', 'action', 'nextState'] as const;
/** The columns of one base64 float32 vector (or null) per step. */
export const VECTOR_COLUMNS = ['tokenLogprobs', 'embedding'] as const;
const KNOWN = new Set<string>([
  'texts',
  ...NUMBER_COLUMNS,
  ...INDEX_COLUMNS,
  ...VECTOR_COLUMNS,
  'extra',
]);

/**
 * Checks `value` as the columns of `n` steps and decodes them; throws a ColumnIssue naming the
 * column and, where one step is at fault, its index (`reward[17]`). Every check is a loop over a
 * typed array or a list of numbers: no object is made per step.
 */
export function parseStepColumns(value: unknown, n: number): StepColumns {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ColumnIssue([], 'must be an object of columns');
  const wire = value as Record<string, unknown>;
  for (const name of Object.keys(wire))
    if (!KNOWN.has(name))
      throw new ColumnIssue([name], `unknown column; the columns are ${[...KNOWN].join(', ')}`);
  const texts = textsColumn(wire.texts);
  const out: StepColumns = {
    n,
    texts,
    state: indexColumn(wire, 'state', n, texts.length, false) as Int32Array,
    action: indexColumn(wire, 'action', n, texts.length, false) as Int32Array,
    nextState: indexColumn(wire, 'nextState', n, texts.length, true),
    reward: numberColumn(wire, 'reward', n) as Float64Array,
    wire: wire as unknown as WireStepColumns,
  };
  const unused = unusedText(texts.length, [out.state, out.action, out.nextState]);
  if (unused >= 0)
    throw new ColumnIssue(
      ['texts', unused],
      "is no step's state, action or next state; send only the texts the steps use",
    );
  if (out.reward === undefined) throw new ColumnIssue(['reward'], 'required column is missing');
  for (const name of ['nll', 'value', 'nextValue'] as const) {
    const column = numberColumn(wire, name, n);
    if (column) out[name] = column;
  }
  for (const name of VECTOR_COLUMNS) {
    const column = vectorColumn(wire, name, n);
    if (column) out[name] = column;
  }
  const extra = extraColumn(wire.extra, n);
  // A column with no step's fields is none: the same event, the same digest, as without it.
  if (extra?.some((e) => e !== null)) out.extra = extra;
  return out;
}

/**
 * How deep a step's extra fields may nest: as deep as they may in the row form, where the step sits
 * 7 levels into the event (`data.groups[g].trajectories[t].steps[s]`), and which a rebuild of the
 * log's event checks (columns are read back as step objects).
 */
const EXTRA_LEVELS = MAX_JSON_DEPTH - 7;

/**
 * Each step's fields beyond rollout-batch/v1: an object of them, or null (an empty object is none).
 * A field of v1 has its own column: in this one it would be two values for one field.
 */
function extraColumn(column: unknown, n: number): (string | null)[] | undefined {
  if (column === undefined) return undefined;
  if (!Array.isArray(column))
    throw new ColumnIssue(['extra'], 'must be an array with one object (or null) per step');
  lengthIs('extra', column.length, n);
  const out: (string | null)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const item: unknown = column[i];
    if (item === null) {
      out[i] = null;
      continue;
    }
    if (typeof item !== 'object' || Array.isArray(item))
      throw new ColumnIssue(
        ['extra', i],
        "must be an object of the step's fields beyond rollout-batch/v1, or null",
      );
    const keys = Object.keys(item);
    const v1 = keys.find((key) => STEP_FIELDS.has(key));
    if (v1 !== undefined)
      throw new ColumnIssue(
        ['extra', i],
        `holds "${v1}", a field of rollout-batch/v1: send it in its column`,
      );
    // The event's own check ran from its top (text, keys, depth); here the row form's depth is what
    // counts, which only a field holding an object or array can come near.
    if (holdsObject(item) && findUnstorable(item, EXTRA_LEVELS))
      throw new ColumnIssue(
        ['extra', i],
        `is nested deeper than ${MAX_JSON_DEPTH} levels counted as in the row form (data.groups[…].trajectories[…].steps[…] and its fields: at most ${EXTRA_LEVELS} levels here)`,
      );
    out[i] = keys.length === 0 ? null : canonicalJson(item);
  }
  return out;
}

/** Whether a field of `item` is an object or array (not only numbers, strings, booleans, null). */
function holdsObject(item: object): boolean {
  for (const value of Object.values(item))
    if (typeof value === 'object' && value !== null) return true;
  return false;
}

function textsColumn(texts: unknown): string[] {
  if (!Array.isArray(texts)) throw new ColumnIssue(['texts'], 'must be an array of strings');
  const bad = texts.findIndex((t) => typeof t !== 'string');
  if (bad >= 0) throw new ColumnIssue(['texts', bad], 'must be a string');
  // Each text once: indices name a text by its place, so a repeat would make two names for one text.
  const first = new Map<string, number>();
  (texts as string[]).forEach((t, i) => {
    const at = first.get(t);
    if (at !== undefined)
      throw new ColumnIssue(['texts', i], `repeats texts[${at}]; send each text once`);
    first.set(t, i);
  });
  return texts as string[];
}

/**
 * The first text no step refers to, or −1. Each text becomes a row of the run's dictionary and
 * stays in the log, so one that no step uses would be stored for nothing (and the row form, which
 * a rebuild replays, would not store it: the projections would differ).
 */
function unusedText(texts: number, columns: (Int32Array | undefined)[]): number {
  const used = new Uint8Array(texts);
  for (const column of columns) {
    if (!column) continue;
    for (let i = 0; i < column.length; i++) {
      const t = column[i] as number;
      if (t >= 0) used[t] = 1;
    }
  }
  return used.indexOf(0);
}

function indexColumn(
  wire: Record<string, unknown>,
  name: (typeof INDEX_COLUMNS)[number],
  n: number,
  texts: number,
  optional: boolean,
): Int32Array | undefined {
  const column = wire[name];
  if (column === undefined) {
    if (optional) return undefined;
    throw new ColumnIssue([name], 'required column is missing');
  }
  if (!Array.isArray(column)) throw new ColumnIssue([name], 'must be an array of text indices');
  lengthIs(name, column.length, n);
  const lowest = optional ? -1 : 0;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const x: unknown = column[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < lowest || x >= texts) {
      throw new ColumnIssue(
        [name, i],
        `must be an index into texts (0 to ${texts - 1}${optional ? ', or −1 for none' : ''}), not ${JSON.stringify(x)}`,
      );
    }
    out[i] = x;
  }
  return out;
}

function numberColumn(
  wire: Record<string, unknown>,
  name: (typeof NUMBER_COLUMNS)[number],
  n: number,
): Float64Array | undefined {
  const column = wire[name];
  if (column === undefined) return undefined;
  const bytes = base64Bytes(name, column, 'little-endian float64 values');
  if (bytes.length !== n * 8)
    throw new ColumnIssue(
      [name],
      `has ${bytes.length} bytes, but ${n} steps of float64 take ${n * 8}`,
    );
  const values = float64Values(bytes);
  // NaN in an optional column is a step without that number, as in the log; reward has no gaps.
  const gapsAllowed = name !== 'reward';
  for (let i = 0; i < n; i++) {
    const x = values[i] as number;
    if (!Number.isFinite(x) && !(gapsAllowed && Number.isNaN(x)))
      throw new ColumnIssue(
        [name, i],
        gapsAllowed ? 'must be finite (NaN for a step without one)' : 'must be finite',
      );
  }
  return values;
}

function vectorColumn(
  wire: Record<string, unknown>,
  name: (typeof VECTOR_COLUMNS)[number],
  n: number,
): (Float32Array | null)[] | undefined {
  const column = wire[name];
  if (column === undefined) return undefined;
  if (!Array.isArray(column))
    throw new ColumnIssue([name], 'must be an array with one base64 string (or null) per step');
  lengthIs(name, column.length, n);
  const out: (Float32Array | null)[] = new Array(n);
  const arena = new Base64Arena(column);
  for (let i = 0; i < n; i++) {
    const item: unknown = column[i];
    if (item === null) {
      out[i] = null;
      continue;
    }
    const bytes = base64Bytes(name, item, 'little-endian float32 values', i, arena);
    if (bytes.length % 4 !== 0 || (name === 'embedding' && bytes.length === 0))
      throw new ColumnIssue(
        [name, i],
        `has ${bytes.length} bytes; a vector is a non-empty multiple of 4 bytes (float32)`,
      );
    const values = float32View(bytes);
    const bad = firstNonFinite(values);
    if (bad >= 0) throw new ColumnIssue([name, i], `value ${bad} is not a finite number`);
    out[i] = values;
  }
  return out;
}

function base64Bytes(
  name: string,
  value: unknown,
  what: string,
  i?: number,
  arena?: Base64Arena,
): Buffer {
  const bytes =
    typeof value === 'string' && value.length % 4 !== 1
      ? arena
        ? arena.decode(value)
        : decodeBase64(value)
      : undefined;
  if (!bytes)
    throw new ColumnIssue(i === undefined ? [name] : [name, i], `must be base64 of ${what}`);
  return bytes;
}

function lengthIs(name: string, length: number, n: number): void {
  if (length !== n)
    throw new ColumnIssue(
      [name],
      `has ${length} values, but the trajectories' stepCount add up to ${n}`,
    );
}
