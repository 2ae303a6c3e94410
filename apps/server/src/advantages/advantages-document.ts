import type { AdvantageSet, IterationAdvantages } from './advantage-sets.service';
import { diagnosticValue } from './advantage-codec';
import type { TrajectoryShape } from './iteration-structure';

/** The advantages/v1 document of one stored iteration (values at float32 precision). */
export function advantagesDocument(
  set: AdvantageSet,
  it: IterationAdvantages,
  shape: TrajectoryShape[],
  withDiagnostics = true,
) {
  const groups: {
    id: string;
    trajectories: { id: string; advantages: number[]; diagnostics?: Record<string, unknown[]> }[];
  }[] = [];
  for (const t of shape) {
    let group = groups[groups.length - 1];
    if (!group || group.id !== t.groupId) {
      group = { id: t.groupId, trajectories: [] };
      groups.push(group);
    }
    const range = Array.from({ length: t.length }, (_, j) => t.offset + j);
    group.trajectories.push({
      id: t.trajectoryId,
      advantages: range.map((k) => it.advantages[k] as number),
      ...(withDiagnostics
        ? {
            diagnostics: Object.fromEntries(
              Object.entries(it.diagnostics).map(([name, d]) => [
                name,
                range.map((k) => diagnosticValue(d, k)),
              ]),
            ),
          }
        : {}),
    });
  }
  return {
    format: 'advantages/v1',
    method: set.method,
    version: set.version,
    params: set.params,
    advantageSetId: set.id,
    iteration: it.iteration,
    summary: it.summary,
    groups,
  };
}
