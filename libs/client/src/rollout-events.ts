import type { ClientEvent } from '@creditlab/events';
import { newEventId } from './creditlab-client';

interface BatchLike {
  groups: { id: string; trajectories: { id: string; outcome?: string; steps: object[] }[] }[];
}

/**
 * One iteration's rollout batch (rollout-batch/v1) as `rollouts.appended`
 * events of at most `maxSteps` steps each: whole trajectories stay together
 * unless one alone is larger, in which case it continues in the next event.
 */
export function rolloutEvents(iteration: number, batch: BatchLike, maxSteps = 2000): ClientEvent[] {
  const events: ClientEvent[] = [];
  let groups: BatchLike['groups'] = [];
  let size = 0;
  const emit = () => {
    if (size === 0) return;
    events.push({
      id: newEventId(),
      type: 'rollouts.appended',
      data: { iteration, groups },
    } as ClientEvent);
    groups = [];
    size = 0;
  };
  for (const group of batch.groups) {
    for (const traj of group.trajectories) {
      const chunks: object[][] = [];
      for (let from = 0; from < traj.steps.length; from += maxSteps)
        chunks.push(traj.steps.slice(from, from + maxSteps));
      if (chunks.length === 0) chunks.push([]);
      for (const steps of chunks) {
        if (size > 0 && size + steps.length > maxSteps) emit();
        let g = groups[groups.length - 1];
        if (!g || g.id !== group.id) {
          g = { id: group.id, trajectories: [] };
          groups.push(g);
        }
        g.trajectories.push({
          id: traj.id,
          ...(traj.outcome ? { outcome: traj.outcome } : {}),
          steps,
        });
        size += Math.max(1, steps.length);
      }
    }
  }
  emit();
  return events;
}
