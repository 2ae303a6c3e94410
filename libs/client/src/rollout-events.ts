import type { ClientEvent } from '@creditlab/events';
import { newEventId } from './creditlab-client';

interface BatchLike {
  groups: { id: string; trajectories: { id: string; outcome?: string; steps: object[] }[] }[];
}

/** Vectors travel as base64 of little-endian float32: 3 to 5 times fewer bytes than JSON numbers. */
export function float32Base64(values: ArrayLike<number>): string {
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  // Float32Array is in the machine's byte order; every platform Node runs on is little-endian.
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).toString('base64');
}

/** A step with its vectors (embedding, token log-probs) in the compact wire form. */
export function compactStep<S extends object>(step: S): S {
  const s = step as S & { embedding?: unknown; tokenLogprobs?: unknown };
  const vector = (v: unknown) =>
    Array.isArray(v) || v instanceof Float32Array ? float32Base64(v as ArrayLike<number>) : v;
  if (s.embedding === undefined && s.tokenLogprobs === undefined) return step;
  return {
    ...step,
    ...(s.embedding !== undefined ? { embedding: vector(s.embedding) } : {}),
    ...(s.tokenLogprobs !== undefined ? { tokenLogprobs: vector(s.tokenLogprobs) } : {}),
  };
}

/**
 * One iteration's rollout batch (rollout-batch/v1) as `rollouts.appended`
 * events of at most `maxSteps` steps each: whole trajectories stay together
 * unless one alone is larger, in which case it continues in the next event. Vectors are sent in
 * the compact form (base64 float32).
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
        chunks.push(traj.steps.slice(from, from + maxSteps).map(compactStep));
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
