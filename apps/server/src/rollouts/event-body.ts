import {
  canonicalJson,
  encodeStepColumns,
  float32Base64,
  float64Values,
  NUMBER_COLUMNS,
  fieldsBeyondV1,
  TextTable,
  VECTOR_COLUMNS,
  type ColumnarRolloutsData,
  type StepColumns,
  type StepPayload,
  type WireStepColumns,
} from '@creditlab/events';
import {
  base64ListMark,
  jsonObjectWithBase64,
  jsonWithBase64Lists,
} from './json-with-base64-lists';

/**
 * The body of a step-bearing event, as the log keeps it (`events.body`): the event's steps, one
 * list per trajectory slice in the order the event names them. Written in the compact form
 * (version 2): each distinct text once, steps as columns, numbers as base64 float64 (exact), and
 * vectors as base64 little-endian float32 — the form clients may send too, so a stored event put
 * back together validates exactly as it did on arrival. An agent's steps repeat their states and
 * actions many times, so the body is several times smaller than the steps as sent, and every
 * byte of it is written twice (table and WAL) on the ingest path.
 *
 * Version 5 (encodeStepsBodyBothWays, withEmbeddingsApart) has the embeddings after the JSON, as
 * bytes. Version 1 (a JSON array of slices of step objects, written before) is still read.
 */
export function encodeStepsBody(slices: StepPayload[][]): Buffer {
  const texts = new TextTable();
  const sliceColumns = slices.map((s) => columns(s, texts));
  return compactJson(2, texts.list, sliceColumns);
}

/**
 * The version 2 body of these slices, and the version 5 one (their embeddings apart, every step
 * having one of one size), made of the same columns: what the log needs of such an event (its digest
 * is of the first, it stores the second).
 */
export function encodeStepsBodyBothWays(slices: StepPayload[][]): {
  canonical: Buffer;
  apart: Buffer;
} {
  const texts = new TextTable();
  const sliceColumns = slices.map((s) => columns(s, texts));
  const withoutEmbeddings = sliceColumns.map(({ embedding: _apart, ...rest }) => rest);
  return {
    canonical: compactJson(2, texts.list, sliceColumns),
    apart: withEmbeddingsApart(
      compactJson(5, texts.list, withoutEmbeddings),
      slices.flat().map((s) => s.embedding as Float32Array),
    ),
  };
}

/**
 * The body of steps sent as objects and since held as columns (stepsAsColumns), cut into slices of
 * `counts` steps: the version 2 body and, when `embeddingsApart` (every step has an embedding, all of
 * one size), the version 5 one too. Byte for byte what encodeStepsBody and encodeStepsBodyBothWays
 * make of the same steps as objects (the version 2 body is a digest's input: a retry of an event
 * stored before this existed must match it), but from typed arrays: texts renumbered by index, not
 * looked up by string, numbers copied out as bytes, each step's fields beyond v1 made JSON once.
 */
export function encodeSlicedColumnsBody(
  c: StepColumns,
  counts: readonly number[],
  { embeddingsApart = false } = {},
): { canonical: Buffer; apart: Buffer | null } {
  const { texts, slices } = slicedColumns(c, counts);
  const canonical = compactJson(2, texts, slices);
  if (!embeddingsApart) return { canonical, apart: null };
  const withoutEmbeddings = slices.map(({ embedding: _apart, ...rest }) => rest);
  return {
    canonical,
    apart: withEmbeddingsApart(
      compactJson(5, texts, withoutEmbeddings),
      c.embedding as Float32Array[],
    ),
  };
}

/**
 * The columns cut into the body's slices, in encodeStepColumns's order: texts numbered anew as the
 * body numbers them (slice by slice: its states, its actions, its next states), an optional column
 * in a slice only if one of its steps has it (NaN, −1 and null are none: steps as objects have no
 * NaN, and the columns were made of them).
 */
function slicedColumns(
  c: StepColumns,
  counts: readonly number[],
): { texts: string[]; slices: SliceColumns[] } {
  const texts: string[] = [];
  const renumbered = new Int32Array(c.texts.length).fill(-1);
  const numbered = (k: number): number => {
    let j = renumbered[k] as number;
    if (j < 0) j = renumbered[k] = texts.push(c.texts[k] as string) - 1;
    return j;
  };
  const indices = (column: Int32Array, from: number, n: number) => {
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const k = column[from + i] as number;
      out[i] = k < 0 ? -1 : numbered(k);
    }
    return out;
  };
  const slices: SliceColumns[] = [];
  let from = 0;
  for (const n of counts) {
    const to = from + n;
    const out: SliceColumns = {
      n,
      state: indices(c.state, from, n),
      action: indices(c.action, from, n),
      reward: float64Bytes(c.reward, from, n),
    };
    for (const key of ['nll', 'value', 'nextValue'] as const) {
      const column = c[key];
      if (column && someNumber(column, from, to)) out[key] = float64Bytes(column, from, n);
    }
    if (c.nextState && c.nextState.subarray(from, to).some((k) => k >= 0))
      out.nextState = indices(c.nextState, from, n);
    for (const key of VECTOR_COLUMNS) {
      const column = c[key]?.slice(from, to);
      if (column?.some((v) => v !== null))
        out[key] = column.map((v) => (v === null ? null : float32Base64(v)));
    }
    const extra = c.extra?.slice(from, to);
    if (extra?.some((e) => e !== null)) out.extra = extra;
    slices.push(out);
    from = to;
  }
  return { texts, slices };
}

const float64Bytes = (column: Float64Array, from: number, n: number) =>
  Buffer.from(column.buffer, column.byteOffset + from * 8, n * 8).toString('base64');

function someNumber(column: Float64Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!Number.isNaN(column[i])) return true;
  return false;
}

function compactJson(v: 2 | 5, texts: string[], sliceColumns: SliceColumns[]): Buffer {
  const lists: (string | null)[][] = [];
  const body: CompactBody = {
    v,
    texts,
    slices: sliceColumns.map((c) => markVectors({ ...c }, lists)),
  };
  return jsonWithBase64Lists(body, lists);
}

/** The wire columns in the order the body writes them (a digest's input: the order is fixed). */
const WIRE_COLUMNS = [
  'texts',
  'state',
  'action',
  'reward',
  'nll',
  'value',
  'nextValue',
  'nextState',
  'tokenLogprobs',
  'embedding',
] as const satisfies readonly (keyof WireStepColumns)[];

/**
 * The body of a columnar rollouts.appended (version 3): the columns as the client sent them (after
 * validation), in a fixed key order, with each trajectory's step count (and fields beyond v1 last,
 * in canonical JSON: withExtraFields). Nothing is encoded step by
 * step: its numbers and vectors are already base64, its texts already once each. With
 * `embeddingsApart`, version 4: the same without `embedding`, the embeddings following as bytes.
 */
export function encodeColumnarBody(
  data: ColumnarRolloutsData,
  { embeddingsApart = false } = {},
): Buffer {
  const body: Record<string, unknown> = {
    v: embeddingsApart ? 4 : 3,
    n: data.groups.flatMap((g) => g.trajectories.map((t) => t.stepCount)),
  };
  const wire = data.columns.wire;
  if (!wire) throw new Error('the columns as sent were left behind before the body was made');
  for (const name of WIRE_COLUMNS)
    if (wire[name] !== undefined && !(embeddingsApart && name === 'embedding'))
      body[name] = wire[name];
  const json = withExtraFields(jsonObjectWithBase64(body, BASE64_COLUMNS), data.columns.extra);
  return embeddingsApart
    ? withEmbeddingsApart(json, data.columns.embedding as Float32Array[])
    : json;
}

/**
 * The JSON object `json` with each step's fields beyond v1 last (`extra`: a list with the object of
 * each step's, or null), written as the canonical JSON the columns hold them in, so that the digest
 * does not depend on the order the client wrote their keys in; spliced in as it is (JSON.stringify
 * of the list would escape every quote of it: more bytes in the log, and time).
 */
function withExtraFields(json: Buffer, extra: readonly (string | null)[] | undefined): Buffer {
  if (!extra) return json;
  const list = `,"extra":[${extra.map((e) => e ?? 'null').join(',')}]}`;
  return Buffer.concat([json.subarray(0, json.length - 1), Buffer.from(list, 'utf8')]);
}

/**
 * A body (versions 4 and 5) whose steps' embeddings, every step's of one size, are not in its JSON
 * but after it: a newline (which the JSON, written without raw control characters, never holds), then
 * the vectors' bytes, one per step in the event's order. So the log holds each vector once as it is
 * (base64 is a third larger), and the step slices hold none: they name where in the body their
 * vectors are (`step_slices.embedding_at`, see embeddingsInBody). Which events are stored so is
 * logBodiesOf's choice (event-digest.ts); their digest stays that of the version 2 or 3 body.
 */
function withEmbeddingsApart(json: Buffer, vectors: readonly Float32Array[]): Buffer {
  // Readers find the vectors after the first newline: the JSON must hold none.
  if (json.includes(NEWLINE))
    throw new Error('a body with embeddings apart: its JSON has a newline');
  const width = (vectors[0] as Float32Array).byteLength;
  const out = Buffer.allocUnsafe(json.length + 1 + vectors.length * width);
  json.copy(out);
  out[json.length] = NEWLINE;
  let at = json.length + 1;
  for (const v of vectors) {
    out.set(new Uint8Array(v.buffer, v.byteOffset, width), at);
    at += width;
  }
  return out;
}

/** Where a stored body holds its steps' embeddings as bytes (versions 4 and 5). */
export interface EmbeddingsInBody {
  /** the first step's vector's byte offset */
  at: number;
  /** bytes per vector */
  width: number;
}

/** Where a stored body of an event of `stepCount` steps holds their embeddings, if it does. */
export function embeddingsInBody(body: Buffer | null, stepCount: number): EmbeddingsInBody | null {
  if (!body || stepCount === 0 || !hasEmbeddingsApart(body)) return null;
  const at = body.indexOf(NEWLINE) + 1;
  const width = (body.length - at) / stepCount;
  // Anything else is a damaged body: wrong offsets would store wrong vectors without a word.
  if (at === 0 || !Number.isInteger(width) || width <= 0 || width % 4 !== 0)
    throw new Error(`a body with embeddings apart does not hold ${stepCount} whole vectors`);
  return { at, width };
}

/** Where the embeddings are from the step `steps` after the first of `inBody`. */
export function embeddingsAfter(inBody: EmbeddingsInBody, steps: number): EmbeddingsInBody {
  return { at: inBody.at + steps * inBody.width, width: inBody.width };
}

const NEWLINE = 0x0a;
const hasEmbeddingsApart = (body: Buffer) =>
  body.length > 7 && /^\{"v":[45],$/.test(body.toString('latin1', 0, 7));

/** A body with its embeddings apart as the body it was made from: their base64 back in each step. */
function embeddingsBackIn(body: Buffer): ColumnarBody | CompactBody {
  const end = body.indexOf(NEWLINE);
  const parsed = JSON.parse(body.toString('utf8', 0, end)) as ColumnarBody | CompactBody;
  const parts: { embedding?: (string | null)[] }[] = 'slices' in parsed ? parsed.slices : [parsed];
  const sizes =
    'slices' in parsed ? parsed.slices.map((sl) => sl.n) : [parsed.n.reduce((a, b) => a + b, 0)];
  const width = (body.length - end - 1) / sizes.reduce((a, b) => a + b, 0);
  let at = end + 1;
  parts.forEach((part, k) => {
    part.embedding = Array.from({ length: sizes[k] as number }, () =>
      body.toString('base64', at, (at += width)),
    );
  });
  return parsed;
}

/** The wire columns that are base64 (numbers) or lists of it (vectors), checked as such. */
const BASE64_COLUMNS = new Set<string>([...NUMBER_COLUMNS, ...VECTOR_COLUMNS]);

/**
 * The columns with each vector column (most of a body's bytes) replaced by a mark, its list of
 * base64 strings added to `lists`: jsonWithBase64Lists copies them into the body as they are.
 */
function markVectors<T extends object>(columns: T, lists: (string | null)[][]): T {
  const named = columns as Record<string, unknown>;
  for (const name of VECTOR_COLUMNS) {
    const list = named[name] as (string | null)[] | undefined;
    if (list === undefined) continue;
    named[name] = base64ListMark(lists.length);
    lists.push(list);
  }
  return columns;
}

/** The slices of a stored body (any version), as step objects a client could have sent. */
export function decodeStepsBody(body: Buffer | null): Record<string, unknown>[][] {
  if (body === null) return [];
  const parsed = hasEmbeddingsApart(body)
    ? embeddingsBackIn(body)
    : (JSON.parse(body.toString('utf8')) as
        CompactBody | ColumnarBody | Record<string, unknown>[][]);
  if (Array.isArray(parsed)) return parsed; // version 1
  if (!('slices' in parsed)) return columnarSlices(parsed);
  return parsed.slices.map((slice) => steps(slice, parsed.texts));
}

interface ColumnarBody extends Omit<WireStepColumns, 'extra'> {
  v: 3 | 4; // 4: its embeddings put back by embeddingsBackIn
  /** Each trajectory's step count, in the event's order. */
  n: number[];
  /** fields beyond rollout-batch/v1, each step's an object (written as canonical JSON), or null */
  extra?: (Record<string, unknown> | null)[];
}

/** A version 3 body's steps, cut into its trajectories. */
function columnarSlices(body: ColumnarBody): Record<string, unknown>[][] {
  const { v: _v, n, texts, ...columns } = body;
  const all = steps({ ...columns, n: n.reduce((a, b) => a + b, 0) }, texts);
  let from = 0;
  return n.map((count) => all.slice(from, (from += count)));
}

interface CompactBody {
  v: 2 | 5; // 5: its embeddings put back by embeddingsBackIn
  texts: string[];
  slices: SliceColumns[];
}

/**
 * One slice's steps as columns, as in the columnar wire form (texts apart); an optional column is
 * left out when no step has it.
 */
type SliceColumns = Omit<WireStepColumns, 'texts' | 'extra'> & {
  n: number;
  /** fields beyond rollout-batch/v1, as canonical JSON (keys sorted: the body is a digest's input) */
  extra?: (string | null)[];
};

function columns(steps: StepPayload[], texts: TextTable): SliceColumns {
  const out: SliceColumns = { n: steps.length, ...encodeStepColumns(steps, texts) };
  const extras = steps.map(extraOf);
  if (extras.some((e) => e !== null)) out.extra = extras;
  return out;
}

function steps(
  c: Omit<SliceColumns, 'extra'> & { extra?: (string | Record<string, unknown> | null)[] },
  texts: string[],
): Record<string, unknown>[] {
  const reward = float64Column(c.reward);
  const nll = c.nll === undefined ? undefined : float64Column(c.nll);
  const value = c.value === undefined ? undefined : float64Column(c.value);
  const nextValue = c.nextValue === undefined ? undefined : float64Column(c.nextValue);
  const out: Record<string, unknown>[] = new Array(c.n);
  for (let i = 0; i < c.n; i++) {
    const step: Record<string, unknown> = {
      state: texts[c.state[i] as number],
      action: texts[c.action[i] as number],
      reward: reward[i],
    };
    setNumber(step, 'nll', nll, i);
    if (c.tokenLogprobs?.[i] != null) step.tokenLogprobs = c.tokenLogprobs[i];
    if (c.embedding?.[i] != null) step.embedding = c.embedding[i];
    setNumber(step, 'value', value, i);
    const next = c.nextState?.[i] ?? -1;
    if (next >= 0) step.nextState = texts[next];
    setNumber(step, 'nextValue', nextValue, i);
    // As JSON text in a compact body (version 2), as an object in a columnar one.
    const extra = c.extra?.[i];
    const fields =
      typeof extra === 'string' ? (JSON.parse(extra) as Record<string, unknown>) : extra;
    out[i] = fields ? { ...step, ...fields } : step;
  }
  return out;
}

function setNumber(
  step: Record<string, unknown>,
  key: string,
  column: Float64Array | undefined,
  i: number,
): void {
  const x = column?.[i];
  if (x !== undefined && !Number.isNaN(x)) step[key] = x;
}

/** A step's fields beyond rollout-batch/v1 as canonical JSON (the body holds them so), or null. */
export function extraOf(step: StepPayload): string | null {
  const keys = fieldsBeyondV1(step);
  if (!keys) return null;
  const extra: Record<string, unknown> = {};
  for (const key of keys) extra[key] = step[key];
  return canonicalJson(extra);
}

function float64Column(b64: string): Float64Array {
  return float64Values(Buffer.from(b64, 'base64'));
}

interface StoredSlice {
  id: string;
  outcome?: string;
  firstStepIndex?: number;
  stepCount?: number;
}

/**
 * An event as its client sent it, from what the log stores: the data (which for step-bearing
 * events names the slices, with the server's firstStepIndex/stepCount) and the body (their steps).
 */
export function wireEvent(stored: {
  id: string;
  type: string;
  data: Record<string, unknown>;
  body: Buffer | null;
}): { id: string; type: string; data: unknown } {
  const { id, type, data } = stored;
  if (type !== 'rollouts.appended' && type !== 'steps.appended') return { id, type, data };
  const slices = decodeStepsBody(stored.body);
  if (type === 'steps.appended') {
    const { stepCount: _n, ...rest } = data;
    return { id, type, data: { ...rest, steps: slices[0] ?? [] } };
  }
  let n = 0;
  const groups = data.groups as { id: string; trajectories: StoredSlice[] }[];
  return {
    id,
    type,
    data: {
      iteration: data.iteration,
      groups: groups.map((g) => ({
        id: g.id,
        trajectories: g.trajectories.map((t) => ({
          id: t.id,
          ...(t.outcome ? { outcome: t.outcome } : {}),
          steps: slices[n++] ?? [],
        })),
      })),
    },
  };
}
