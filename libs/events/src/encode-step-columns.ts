import { float32Base64, float64Base64Of } from './base64-numbers';
import { VECTOR_COLUMNS, type WireStepColumns } from './step-columns';

/**
 * A step as the column encoder reads it: the fields of rollout-batch/v1, a vector as numbers or
 * already as base64 float32 (as a client may hold it; the server's validated steps hold
 * Float32Array).
 */
export interface EncodableStep {
  state: string;
  action: string;
  reward: number;
  nll?: number;
  value?: number;
  nextValue?: number;
  nextState?: string;
  tokenLogprobs?: ArrayLike<number> | string;
  embedding?: ArrayLike<number> | string;
}

/** Texts each kept once, numbered in the order they are first met. */
export class TextTable {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();

  of(text: string): number {
    let i = this.index.get(text);
    if (i === undefined) {
      i = this.list.push(text) - 1;
      this.index.set(text, i);
    }
    return i;
  }
}

/** The optional number columns, each with how to read it from a step. */
const NUMBER_COLUMNS = [
  ['nll', (s: EncodableStep) => s.nll],
  ['value', (s: EncodableStep) => s.value],
  ['nextValue', (s: EncodableStep) => s.nextValue],
] as const;

/**
 * Steps as the columns of the columnar form (docs/events.md, "Columnar steps"), their texts added
 * to `texts` (which several calls may share, as the log body's slices do). One encoder for the
 * client's wire form and the server's log body, because the body is a digest's input: its bytes
 * must not change. So the order is fixed: texts numbered column by column (states, actions, next
 * states), keys in the order below; an optional column is left out when no step has it.
 */
export function encodeStepColumns(
  steps: readonly EncodableStep[],
  texts: TextTable,
): Omit<WireStepColumns, 'texts' | 'extra'> {
  const n = steps.length;
  const state = new Array<number>(n);
  for (let i = 0; i < n; i++) state[i] = texts.of((steps[i] as EncodableStep).state);
  const action = new Array<number>(n);
  for (let i = 0; i < n; i++) action[i] = texts.of((steps[i] as EncodableStep).action);
  const out: Omit<WireStepColumns, 'texts' | 'extra'> = {
    state,
    action,
    reward: numberColumn(steps, (s) => s.reward),
  };
  for (const [key, field] of NUMBER_COLUMNS)
    if (steps.some((s) => field(s) !== undefined)) out[key] = numberColumn(steps, field);
  if (steps.some((s) => s.nextState !== undefined))
    out.nextState = steps.map((s) => (s.nextState === undefined ? -1 : texts.of(s.nextState)));
  for (const key of VECTOR_COLUMNS)
    if (steps.some((s) => s[key] !== undefined)) out[key] = steps.map((s) => vectorBase64(s[key]));
  return out;
}

/**
 * One number field of every step as base64 float64, NaN where a step has none. Each field is read
 * by a function of its own rather than by a key held in a variable, which V8 cannot make a
 * fixed-offset load.
 */
function numberColumn(
  steps: readonly EncodableStep[],
  field: (s: EncodableStep) => number | undefined,
): string {
  return float64Base64Of(steps.length, (i) => field(steps[i] as EncodableStep));
}

function vectorBase64(v: ArrayLike<number> | string | undefined): string | null {
  if (v === undefined) return null;
  return typeof v === 'string' ? v : float32Base64(v);
}
