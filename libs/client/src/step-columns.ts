import {
  encodeStepColumns,
  fieldsBeyondV1,
  TextTable,
  type EncodableStep,
  type WireStepColumns,
} from '@creditlab/events';

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
 * steps"), or null when the row form must carry them: a step the columns would not carry as it is
 * (see columnsCarry). A step without nll, value or nextValue has NaN in that column; fields beyond
 * rollout-batch/v1 go in the `extra` column (an object per step, null for a step without any).
 */
export function stepColumns(groups: { id: string; trajectories: RowTrajectory[] }[]): {
  groups: { id: string; trajectories: ColumnarTrajectory[] }[];
  columns: WireStepColumns;
} | null {
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  if (!steps.every(columnsCarry)) return null;
  const texts = new TextTable();
  const columns: WireStepColumns = {
    texts: texts.list,
    ...encodeStepColumns(steps as EncodableStep[], texts),
  };
  const extra = extraColumn(steps);
  if (extra) columns.extra = extra;
  return {
    groups: groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map(({ steps: ts, ...t }) => ({ ...t, stepCount: ts.length })),
    })),
    columns,
  };
}

/**
 * Each step's fields beyond rollout-batch/v1 (null for a step without any), or undefined if none has
 * any. A field whose value is undefined is none, as JSON leaves it out of the row form.
 */
function extraColumn(steps: object[]): (Record<string, unknown> | null)[] | undefined {
  let some = false;
  const column = steps.map((step) => {
    const s = step as Record<string, unknown>;
    const keys = fieldsBeyondV1(step)?.filter((key) => s[key] !== undefined);
    if (!keys?.length) return null;
    some = true;
    return Object.fromEntries(keys.map((key) => [key, s[key]]));
  });
  return some ? column : undefined;
}

/**
 * Whether the columns carry this step as it is: rollout-batch/v1's fields each of the type that
 * field has (fields beyond v1 travel as they are, in the `extra` column). Encoding anything else would change it without a word (a `null` NLL would be
 * stored as 0; a list holding "0.5", given to stepColumns directly, as 0.5: rolloutEvents has
 * made vectors base64 before) or have it refused for what the encoding made of it (a text reward
 * as "must be finite"); in the row form the server refuses the field itself, naming the step.
 */
function columnsCarry(step: object): boolean {
  const s = step as Record<string, unknown>;
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
