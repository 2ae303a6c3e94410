import type { AdvantageSet, IterationAdvantages } from './advantage-sets.service';
import { diagnosticValue } from './advantage-codec';

/** The advantages/v1 document of one stored iteration (values at float32 precision). */
export function advantagesDocument(
  set: AdvantageSet,
  it: IterationAdvantages,
  withDiagnostics = true,
) {
  const groups: {
    id: string;
    trajectories: { id: string; advantages: number[]; diagnostics?: Record<string, unknown[]> }[];
  }[] = [];
  for (const t of it.shape) {
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
    /** The log position of the iteration these advantages were computed from (its version). */
    inputsSeq: it.inputsSeq,
    iteration: it.iteration,
    summary: it.summary,
    groups,
  };
}
