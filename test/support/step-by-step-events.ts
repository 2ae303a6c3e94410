import { newEventId } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import type { RolloutBatch } from '@creditlab/estimators';

type StepsAppended = Extract<ClientEvent, { type: 'steps.appended' }>;

/** A steps.appended event: `steps` of one trajectory from `firstStepIndex` on. */
export function stepsAppended(
  iteration: number,
  groupId: string,
  trajectoryId: string,
  firstStepIndex: number,
  steps: StepsAppended['data']['steps'],
): StepsAppended {
  return {
    id: newEventId(),
    type: 'steps.appended',
    data: { iteration, groupId, trajectoryId, firstStepIndex, steps },
  };
}

/** Iteration `i` one step at a time, round-robin over its trajectories (last first): rows land out of canonical order. */
export function stepByStepEvents(i: number, batch: RolloutBatch): ClientEvent[] {
  const events: ClientEvent[] = [];
  const all = batch.groups.flatMap((g) => g.trajectories.map((t) => ({ g, t })));
  const longest = Math.max(...all.map(({ t }) => t.steps.length));
  for (let k = 0; k < longest; k++) {
    // First steps in order (that order is the canonical one), later ones last trajectory first.
    for (const { g, t } of k === 0 ? all : [...all].reverse()) {
      if (k >= t.steps.length) continue;
      events.push(stepsAppended(i, g.id, t.id, k, [{ ...t.steps[k]! }]));
    }
  }
  for (const { g, t } of all)
    if (t.outcome)
      events.push({
        id: newEventId(),
        type: 'trajectory.finished',
        data: { iteration: i, groupId: g.id, trajectoryId: t.id, outcome: t.outcome },
      });
  return events;
}
