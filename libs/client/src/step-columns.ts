import {
  type ClientEvent,
  encodeStepColumns,
  STEP_FIELDS,
  TextTable,
  type EncodableStep,
  type WireStepColumns,
} from '@creditlab/events';
import { CreditlabApiError } from './client-errors';

/** A trajectory of a rollouts.appended event in the row form, its steps as objects. */
export interface RowTrajectory {
  id: string;
  outcome?: string;
  steps: object[];
}

/** The same trajectory in the columnar form: its steps are a run of the event's columns. */
export interface ColumnarTrajectory {
  id: string;
  outcome?: string;
  stepCount: number;
}

/**
 * The groups' steps as the columns of one columnar rollouts.appended (docs/events.md, "Columnar
 * steps"), or null when the row form must carry them: a step with fields beyond rollout-batch/v1,
 * or one the columns would not carry as it is (see columnsCarry). A step without nll, value or
 * nextValue has NaN in that column.
 */
export function stepColumns(groups: { id: string; trajectories: RowTrajectory[] }[]): {
  groups: { id: string; trajectories: ColumnarTrajectory[] }[];
  columns: WireStepColumns;
} | null {
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  if (!steps.every(columnsCarry)) return null;
  const texts = new TextTable();
  const columns = encodeStepColumns(steps as EncodableStep[], texts);
  return {
    groups: groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map(({ steps: ts, ...t }) => ({ ...t, stepCount: ts.length })),
    })),
    columns: { texts: texts.list, ...columns },
  };
}

/**
 * Whether the columns carry this step as it is: only rollout-batch/v1's fields, each of the type
 * that field has. Encoding anything else would change it without a word (a `null` NLL would be
 * stored as 0; a list holding "0.5", given to stepColumns directly, as 0.5: rolloutEvents has
 * made vectors base64 before) or have it refused for what the encoding made of it (a text reward
 * as "must be finite"); in the row form the server refuses the field itself, naming the step.
 */
function columnsCarry(step: object): boolean {
  const s = step as Record<string, unknown>;
  for (const key of Object.keys(s)) if (!STEP_FIELDS.has(key)) return false;
  return (
    typeof s.state === 'string' &&
    typeof s.action === 'string' &&
    Number.isFinite(s.reward) &&
    optionalNumber(s.nll) &&
    optionalNumber(s.value) &&
    optionalNumber(s.nextValue) &&
    (s.nextState === undefined || typeof s.nextState === 'string') &&
    vectorCarried(s.tokenLogprobs) &&
    vectorCarried(s.embedding)
  );
}

const optionalNumber = (x: unknown) => x === undefined || Number.isFinite(x);

/** A vector as base64 text, a Float32Array, or a list of numbers (left out: undefined). */
function vectorCarried(v: unknown): boolean {
  if (v === undefined || typeof v === 'string' || v instanceof Float32Array) return true;
  return Array.isArray(v) && v.every((x) => typeof x === 'number');
}

// Kept where clients import it from (float32Base64 is with rolloutEvents).
export { float64Base64 } from '@creditlab/events';

/**
 * How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns:
 * it reads one with no steps (the same words as a trajectory sent with neither steps nor columns).
 */
const STEPS_MISSING = /^data\.groups\[\d+\]\.trajectories\[\d+\]\.steps$/;
const STEPS_MISSING_REASON = 'required array is missing';

/**
 * The refusal `e` of a request of `events` (one per line, in order), with advice if it is that of a
 * server older than columnar steps refusing one: nothing in the server's own message says why.
 */
export function olderServerAdvice(e: unknown, events: readonly ClientEvent[]): unknown {
  if (!(e instanceof CreditlabApiError) || e.status !== 400) return e;
  const { line, path, reason } = e.body;
  if (typeof line !== 'number' || typeof path !== 'string') return e;
  if (!STEPS_MISSING.test(path) || reason !== STEPS_MISSING_REASON) return e;
  const data = events[line - 1]?.data;
  if (data === null || typeof data !== 'object' || !('columns' in data)) return e;
  return new CreditlabApiError(
    e.status,
    e.body,
    'the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: ' +
      'update the server, or send steps as objects (rolloutEvents(…, { columnar: false }), or ' +
      'CREDITLAB_COLUMNAR_STEPS=0 in the environment)',
  );
}
