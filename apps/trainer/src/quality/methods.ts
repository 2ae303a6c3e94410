import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import type { RolloutTrajectory } from '../rollout';

/** A row of the harness: an estimator at its defaults, or a reference computed from the truth. */
export interface QualityRow {
  name: string;
  /** 'oracle': computed from the exact values, a reference; 'baseline-free': the plain return. */
  kind: 'oracle' | 'baseline-free' | 'method';
  advantages(groups: WireGroup[], steps: BatchStep[], gamma: number): Float64Array;
}

export interface WireGroup {
  id: string;
  trajectories: { id: string; outcome: string; steps: Record<string, unknown>[] }[];
}

/** A step of the batch in canonical order, with the truth the harness knows about it. */
export interface BatchStep {
  trueAdvantage: number;
  trueValue: number;
  /** Discounted return-to-go from this step (the truth's γ). */
  returnToGo: number;
}

const byMethod =
  (name: string, params: Record<string, unknown> = {}): QualityRow['advantages'] =>
  (groups) =>
    estimate(columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups }), name, params)
      .advantages;

export const QUALITY_ROWS: QualityRow[] = [
  {
    name: 'truth',
    kind: 'oracle',
    advantages: (_g, steps) => Float64Array.from(steps, (s) => s.trueAdvantage),
  },
  {
    name: 'return − exact V',
    kind: 'oracle',
    advantages: (_g, steps) => Float64Array.from(steps, (s) => s.returnToGo - s.trueValue),
  },
  // the no-baseline return, at the truth's discount
  {
    name: 'return (no baseline)',
    kind: 'baseline-free',
    advantages: (g, _s, gamma) => byMethod('reinforce', { gamma })(g, _s, gamma),
  },
  ...['grpo', 'rloo', 'ppo-gae', 'gigpo', 'gaca', 'gated-bepo', 'gagpo', 'bipace'].map(
    (name): QualityRow => ({ name, kind: 'method', advantages: byMethod(name) }),
  ),
];

/** A task group as rollout-batch/v1 for the estimators. */
export function wireGroup(taskSeed: number, trajectories: RolloutTrajectory[]): WireGroup {
  return {
    id: `task-${taskSeed}`,
    trajectories: trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome,
      steps: t.steps.map((s) => ({ ...s.record })),
    })),
  };
}
