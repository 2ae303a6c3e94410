import type { ColumnarBatch } from '../batch/columnar-batch';
import { getMethod, type EstimateResult } from '../registry/registry';
import { typedReads } from '../typed-arrays';

const { intAt } = typedReads;

export const ADVANTAGES_FORMAT = 'advantages/v1';

export interface AdvantagesTrajectory {
  id: string;
  advantages: number[];
  diagnostics?: Record<string, (number | boolean | null)[]>;
}

export interface AdvantagesDocument {
  format: typeof ADVANTAGES_FORMAT;
  method: string;
  version: string;
  params: Record<string, unknown>;
  summary: EstimateResult['summary'];
  groups: { id: string; trajectories: AdvantagesTrajectory[] }[];
}

/**
 * The `advantages/v1` document for one result: groups and trajectories in
 * input order, per-step arrays sliced per trajectory, NaN written as null.
 * `summary` (batch-level facts such as the singleton rate) is an addition to
 * the format that readers of v1 may ignore.
 */
export function toAdvantagesDocument(
  batch: ColumnarBatch,
  result: EstimateResult,
  options: { diagnostics?: boolean } = {},
): AdvantagesDocument {
  const withDiagnostics = options.diagnostics ?? true;
  const kinds = new Map(getMethod(result.method).diagnostics.map((d) => [d.name, d.kind]));
  const off = batch.trajectoryStepOffsets;
  const groups = batch.groupIds.map((id, g) => {
    const trajectories: AdvantagesTrajectory[] = [];
    for (
      let i = intAt(batch.groupTrajectoryOffsets, g);
      i < intAt(batch.groupTrajectoryOffsets, g + 1);
      i++
    ) {
      const lo = intAt(off, i);
      const hi = intAt(off, i + 1);
      const traj: AdvantagesTrajectory = {
        id: batch.trajectoryIds[i] as string,
        advantages: Array.from(result.advantages.subarray(lo, hi)),
      };
      if (withDiagnostics && Object.keys(result.diagnostics).length > 0) {
        traj.diagnostics = {};
        for (const [name, values] of Object.entries(result.diagnostics)) {
          const kind = kinds.get(name) ?? 'number';
          traj.diagnostics[name] = Array.from(values.subarray(lo, hi), (x) =>
            kind === 'boolean' ? x !== 0 : Number.isNaN(x) ? null : x,
          );
        }
      }
      trajectories.push(traj);
    }
    return { id, trajectories };
  });
  return {
    format: ADVANTAGES_FORMAT,
    method: result.method,
    version: result.version,
    params: result.params,
    summary: result.summary,
    groups,
  };
}
