import {
  decodeBase64,
  firstNonFinite,
  float32View,
  MAX_INT32,
  textProblem,
  TextTable,
  type ColumnarRolloutsData,
  type StepColumns,
  type ValidEvent,
} from '@creditlab/events';
import { z } from 'zod';
import { columnsSentAsSteps, nanColumn, nullColumn } from './steps-as-columns';

/**
 * A `rollouts.appended` whose steps are objects, checked straight into the columns it is held as
 * (`sentAsSteps`), in one walk — or undefined, and the event goes the general way (validateEvent,
 * then stepsAsColumns), which decides and, for a refusal, words it. The general way walks the event
 * three times, once for what PostgreSQL cannot store (findUnstorable), once in zod's interpreted
 * schemas, which copy every step, and once more to turn the copies into columns; this is the one
 * walk a compiled schema would make. It accepts only what the general way accepts, with the same
 * result (test/step-objects-as-columns.unit.spec.ts compares them on random and broken events), and
 * declines whatever it is not sure of: steps with fields beyond rollout-batch/v1, ids longer than 512
 * UTF-16 units, any key or value out of the plain shape.
 */
export function stepObjectsAsColumns(value: unknown): ValidEvent | undefined {
  if (!isRecord(value) || !hasOnly(value, ENVELOPE_KEYS, 3)) return undefined;
  const { id, type, data } = value;
  if (type !== 'rollouts.appended' || typeof id !== 'string' || !uuid.safeParse(id).success)
    return undefined;
  if (!isRecord(data) || !hasOnly(data, DATA_KEYS, 2)) return undefined;
  const { iteration, groups } = data;
  if (!Number.isInteger(iteration) || (iteration as number) < 0) return undefined;
  if ((iteration as number) > MAX_INT32 || !Array.isArray(groups)) return undefined;

  let n = 0;
  const skeleton: ColumnarRolloutsData['groups'] = [];
  const slices: unknown[][] = [];
  for (const group of groups as unknown[]) {
    if (!isRecord(group) || !hasOnly(group, GROUP_KEYS, 2) || !isKey(group.id)) return undefined;
    if (!Array.isArray(group.trajectories)) return undefined;
    const trajectories: ColumnarRolloutsData['groups'][number]['trajectories'] = [];
    for (const t of group.trajectories as unknown[]) {
      if (!isRecord(t) || !isKey(t.id) || !Array.isArray(t.steps)) return undefined;
      const outcome = t.outcome;
      if (outcome !== undefined && !isOutcome(outcome)) return undefined;
      if (Object.keys(t).length !== (outcome === undefined ? 2 : 3)) return undefined;
      const steps = t.steps as unknown[];
      trajectories.push({ id: t.id, ...(outcome ? { outcome } : {}), stepCount: steps.length });
      slices.push(steps);
      n += steps.length;
    }
    skeleton.push({ id: group.id, trajectories });
  }
  const columns = columnsOf(slices, n);
  if (!columns) return undefined;
  return {
    id: id.toLowerCase(),
    type: 'rollouts.appended',
    data: { iteration: iteration as number, groups: skeleton, columns },
  };
}

const uuid = z.uuid();
const ENVELOPE_KEYS = new Set(['id', 'type', 'data']);
const DATA_KEYS = new Set(['iteration', 'groups']);
const GROUP_KEYS = new Set(['id', 'trajectories']);
const OUTCOMES = new Set(['success', 'failure', 'truncated']);
const NUMBER_FIELDS = ['nll', 'value', 'nextValue'] as const;
/** rollout-batch/v1's step fields (STEP_FIELDS, in hand: see fieldsBeyondV1 on imported names in per-step loops). */
export const V1_FIELDS: ReadonlySet<string> = new Set([
  'state',
  'action',
  'reward',
  ...NUMBER_FIELDS,
  'nextState',
  'tokenLogprobs',
  'embedding',
]);
/** Ids of groups and trajectories: at most 512 characters as zod counts them (code points), so at most 512 UTF-16 units is surely within. */
const MAX_KEY_UNITS = 512;

/**
 * The steps of every slice as columns, in the order stepsAsColumns numbers texts and fills them,
 * or undefined if a step is not plainly valid.
 */
function columnsOf(slices: readonly unknown[][], n: number): StepColumns | undefined {
  const texts = new TextTable();
  const c = columnsSentAsSteps(n, texts);
  let i = 0;
  for (const steps of slices)
    for (const step of steps) {
      if (!isRecord(step)) return undefined;
      // A field beyond rollout-batch/v1: the general way (told before any vector is decoded).
      for (const key in step) if (!V1_FIELDS.has(key)) return undefined;
      const { state, action, reward, nextState, tokenLogprobs, embedding } = step;
      if (!isText(state) || !isText(action) || !isFiniteNumber(reward)) return undefined;
      c.state[i] = texts.of(state);
      c.action[i] = texts.of(action);
      c.reward[i] = reward;
      for (const name of NUMBER_FIELDS) {
        const x = step[name];
        if (x === undefined) continue;
        if (!isFiniteNumber(x)) return undefined;
        (c[name] ??= nanColumn(n))[i] = x;
      }
      if (nextState !== undefined) {
        if (!isText(nextState)) return undefined;
        (c.nextState ??= new Int32Array(n).fill(-1))[i] = texts.of(nextState);
      }
      if (tokenLogprobs !== undefined) {
        const vector = float32Vector(tokenLogprobs);
        if (!vector) return undefined;
        (c.tokenLogprobs ??= nullColumn(n))[i] = vector;
      }
      if (embedding !== undefined) {
        const vector = float32Vector(embedding);
        if (!vector || vector.length === 0) return undefined;
        (c.embedding ??= nullColumn(n))[i] = vector;
      }
      i++;
    }
  return c;
}

/**
 * A vector as the schema's float32Vector takes it — an array of finite numbers within float32's
 * range, or standard base64 of little-endian float32 values, all finite — else undefined.
 */
function float32Vector(v: unknown): Float32Array | undefined {
  let values: Float32Array;
  if (typeof v === 'string') {
    const bytes = decodeBase64(v);
    if (!bytes || bytes.length % 4 !== 0) return undefined;
    values = float32View(bytes);
  } else if (Array.isArray(v)) {
    for (const x of v as unknown[]) if (!isFiniteNumber(x)) return undefined;
    values = Float32Array.from(v as number[]);
  } else return undefined;
  return firstNonFinite(values) < 0 ? values : undefined;
}

/** A plain JSON object (what JSON.parse makes of `{…}`), none of whose keys is `__proto__`. */
function isRecord(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.getPrototypeOf(v) === Object.prototype &&
    !Object.hasOwn(v, '__proto__')
  );
}

/** Whether `o` has `count` keys, each one of `keys` (so each of them, when `count` is their number). */
function hasOnly(o: object, keys: ReadonlySet<string>, count: number): boolean {
  const own = Object.keys(o);
  return own.length === count && own.every((k) => keys.has(k));
}

const isText = (v: unknown): v is string => typeof v === 'string' && textProblem(v) === undefined;
const isKey = (v: unknown): v is string => isText(v) && v.length >= 1 && v.length <= MAX_KEY_UNITS;
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isOutcome = (v: unknown): v is 'success' | 'failure' | 'truncated' =>
  typeof v === 'string' && OUTCOMES.has(v);
