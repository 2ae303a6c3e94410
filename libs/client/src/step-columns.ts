import type { WireStepColumns } from '@creditlab/events';
import { float32Base64 } from './float32-base64';

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

type Step = Record<string, unknown>;
const NUMBERS = ['nll', 'value', 'nextValue'] as const;
const VECTORS = ['tokenLogprobs', 'embedding'] as const;
const FIELDS = new Set<string>(['state', 'action', 'reward', 'nextState', ...NUMBERS, ...VECTORS]);

/**
 * The groups' steps as the columns of one columnar rollouts.appended (docs/events.md, "Columnar
 * rollouts"), or null when the row form must carry them: a step with fields beyond
 * rollout-batch/v1. A step without nll, value or nextValue has NaN in that column.
 */
export function stepColumns(groups: { id: string; trajectories: RowTrajectory[] }[]): {
  groups: { id: string; trajectories: ColumnarTrajectory[] }[];
  columns: WireStepColumns;
} | null {
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps)) as Step[];
  if (steps.some((s) => Object.keys(s).some((k) => !FIELDS.has(k)))) return null;
  const texts: string[] = [];
  const index = new Map<string, number>();
  const textIndex = (text: unknown) => {
    let i = index.get(text as string);
    if (i === undefined) index.set(text as string, (i = texts.push(text as string) - 1));
    return i;
  };
  const columns: WireStepColumns = {
    texts,
    state: steps.map((s) => textIndex(s.state)),
    action: steps.map((s) => textIndex(s.action)),
    reward: float64Base64(steps.map((s) => s.reward as number)),
  };
  for (const key of NUMBERS)
    if (steps.some((s) => s[key] !== undefined))
      columns[key] = float64Base64(
        steps.map((s) => (s[key] === undefined ? NaN : (s[key] as number))),
      );
  if (steps.some((s) => s.nextState !== undefined))
    columns.nextState = steps.map((s) => (s.nextState === undefined ? -1 : textIndex(s.nextState)));
  for (const key of VECTORS)
    if (steps.some((s) => s[key] !== undefined)) columns[key] = steps.map((s) => vector(s[key]));
  return {
    groups: groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map(({ steps: ts, ...t }) => ({ ...t, stepCount: ts.length })),
    })),
    columns,
  };
}

function vector(v: unknown): string | null {
  if (v === undefined) return null;
  return typeof v === 'string' ? v : float32Base64(v as ArrayLike<number>);
}

/** Numbers as base64 of little-endian float64 (exact). */
export function float64Base64(values: number[]): string {
  const f64 = Float64Array.from(values);
  return Buffer.from(f64.buffer, f64.byteOffset, f64.byteLength).toString('base64');
}
