import { canonicalJson, eventBodyHash, type StepPayload, type ValidEvent } from '@creditlab/events';
import { createHash } from 'node:crypto';
import { encodeColumnarBody, encodeStepsBody } from './event-body';

/**
 * What the log stores of an event beyond its data: the compact body of its steps (step-bearing
 * events), or null.
 */
export function bodyOf(event: ValidEvent): Buffer | null {
  if (event.type === 'steps.appended') return encodeStepsBody([event.data.steps as StepPayload[]]);
  if (event.type !== 'rollouts.appended') return null;
  const data = event.data;
  if ('columns' in data) return encodeColumnarBody(data);
  // From the event itself, not the projector's slicesOf: this runs on the preparing thread, which
  // does not load the projector.
  return encodeStepsBody(
    data.groups.flatMap((g) => g.trajectories.map((t) => t.steps as StepPayload[])),
  );
}

/**
 * SHA-256 of an event's content, what tells a retried event (same id, same content: a duplicate)
 * from a reused id (same id, other content: a conflict): its type, its data apart from the steps as
 * canonical JSON, and the compact body of its steps, which the log stores anyway. Hashing the body
 * instead of the steps' canonical JSON costs a third of the ingest path's CPU less: the body is
 * already made, a few times smaller, and holds vectors as bytes rather than decimal text.
 */
export function eventDigest(event: ValidEvent, body: Buffer | null): Buffer {
  const hash = createHash('sha256')
    .update('creditlab-event/2\n')
    .update(event.type)
    .update('\n')
    .update(canonicalJson(skeleton(event)));
  if (body) hash.update('\n').update(body);
  return hash.digest();
}

/**
 * Whether a hash stored for this event's id says it is the same event: today's digest, or the
 * first one (canonical JSON of the whole data, `eventBodyHash`), which events stored before the
 * compact body carry. Computed only when ids collide, so the fallback costs ingest nothing.
 */
export function sameEvent(stored: Buffer, event: ValidEvent, digest: Buffer): boolean {
  return stored.equals(digest) || stored.equals(eventBodyHash(event.type, event.data));
}

/** The data without its steps (they are in the body). */
function skeleton(event: ValidEvent): unknown {
  if (event.type === 'steps.appended') {
    const { steps: _steps, ...rest } = event.data;
    return rest;
  }
  if (event.type !== 'rollouts.appended') return event.data;
  if ('columns' in event.data) {
    const { columns: _columns, ...rest } = event.data; // trajectories name their stepCount
    return rest;
  }
  return {
    iteration: event.data.iteration,
    groups: event.data.groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map(({ steps: _steps, ...t }) => t),
    })),
  };
}
