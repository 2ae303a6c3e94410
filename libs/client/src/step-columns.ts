import {
  encodeStepColumns,
  STEP_FIELDS,
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
 * rollouts"), or null when the row form must carry them: a step with fields beyond
 * rollout-batch/v1. A step without nll, value or nextValue has NaN in that column.
 */
export function stepColumns(groups: { id: string; trajectories: RowTrajectory[] }[]): {
  groups: { id: string; trajectories: ColumnarTrajectory[] }[];
  columns: WireStepColumns;
} | null {
  const steps = groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  if (steps.some((s) => Object.keys(s).some((k) => !STEP_FIELDS.has(k)))) return null;
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

// Kept where clients import it from (float32Base64 is with rolloutEvents).
export { float64Base64 } from '@creditlab/events';
