import {
  canonicalJson,
  eventBodyHash,
  validateEvent,
  type StepPayload,
  type ValidEvent,
} from '@creditlab/events';
import { createHash } from 'node:crypto';
import {
  encodeColumnarBody,
  encodeSlicedColumnsBody,
  encodeStepsBody,
  encodeStepsBodyBothWays,
  wireEvent,
} from './event-body';
import { stepsAsColumns } from './steps-as-columns';

/**
 * The canonical body of an event's steps (step-bearing events), or null: the compact body (version 2,
 * or 3 for columns; event-body.ts), the input of the event's digest.
 */
export function bodyOf(event: ValidEvent): Buffer | null {
  if (event.type !== 'steps.appended' && event.type !== 'rollouts.appended') return null;
  if ('columns' in event.data) return encodeColumnarBody(event.data);
  return encodeStepsBody(sliceStepsOf(event));
}

/**
 * What the log keeps of an event's steps: the canonical body (bodyOf), the input of its digest, and
 * the body it stores — the same, or, when every step has an embedding and all are of one size (a
 * trainer's hidden states), the same with the embeddings apart, as bytes after the JSON (versions 4
 * and 5), which the step slices then point into rather than holding a second copy
 * (migrations/20261211000000_embeddings_in_the_log).
 */
export function logBodiesOf(event: ValidEvent): {
  canonical: Buffer | null;
  stored: Buffer | null;
  /** The event to hand on: a rollouts.appended's steps as columns, however they came (stepsAsColumns). */
  held: ValidEvent;
} {
  const held = stepsAsColumns(event);
  const apart = embeddingsOfOneSize(held);
  if (
    held.type === 'rollouts.appended' &&
    'columns' in held.data &&
    held.data.columns.sentAsSteps
  ) {
    const counts = held.data.groups.flatMap((g) => g.trajectories.map((t) => t.stepCount));
    const bodies = encodeSlicedColumnsBody(held.data.columns, counts, { embeddingsApart: apart });
    return { canonical: bodies.canonical, stored: bodies.apart ?? bodies.canonical, held };
  }
  if (!apart) {
    const canonical = bodyOf(event);
    return { canonical, stored: canonical, held };
  }
  if (event.type === 'rollouts.appended' && 'columns' in event.data) {
    const canonical = encodeColumnarBody(event.data);
    return { canonical, stored: encodeColumnarBody(event.data, { embeddingsApart: true }), held };
  }
  const { canonical, apart: stored } = encodeStepsBodyBothWays(sliceStepsOf(event));
  return { canonical, stored, held };
}

/** The slices of a step-bearing event sent as step objects, in its order. */
function sliceStepsOf(event: ValidEvent): StepPayload[][] {
  // From the event itself, not the projector's slicesOf: this runs on the preparing thread, which
  // does not load the projector.
  if (event.type === 'steps.appended') return [event.data.steps as StepPayload[]];
  if (event.type !== 'rollouts.appended' || 'columns' in event.data) return [];
  return event.data.groups.flatMap((g) => g.trajectories.map((t) => t.steps as StepPayload[]));
}

/** Whether the event has steps, each with an embedding, all of one size. */
function embeddingsOfOneSize(event: ValidEvent): boolean {
  let size = -1;
  const sameSize = (v: Float32Array | null | undefined) => {
    if (!v || (size >= 0 && v.length !== size)) return false;
    size = v.length;
    return true;
  };
  if (event.type === 'rollouts.appended' && 'columns' in event.data) {
    const column = event.data.columns.embedding;
    return column !== undefined && column.length > 0 && column.every(sameSize);
  }
  const slices = sliceStepsOf(event);
  return (
    slices.some((s) => s.length > 0) &&
    slices.every((s) => s.every((step) => sameSize(step.embedding)))
  );
}

/**
 * SHA-256 of an event's content, what tells a retried event (same id, same content: a duplicate)
 * from a reused id (same id, other content: a conflict): its type, its data apart from the steps as
 * canonical JSON, and the canonical body of its steps (bodyOf), made for the log anyway. Hashing the
 * body instead of the steps' canonical JSON costs a third of the ingest path's CPU less: the body is
 * already made, a few times smaller, and holds vectors as base64 rather than decimal text.
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
 * first one (canonical JSON of the whole data as validated, `eventBodyHash`), which events stored
 * before the compact body carry. Computed only when ids collide, so the fallback costs ingest
 * nothing; for steps sent as objects and since held as columns (stepsAsColumns) it is of the objects
 * put back from the event's body, as the hashes' backfill reads events.
 */
export function sameEvent(
  stored: Buffer,
  prepared: { event: ValidEvent; hash: Buffer; body: Buffer | null },
): boolean {
  if (stored.equals(prepared.hash)) return true;
  const { event, body } = prepared;
  const sentAsSteps =
    event.type === 'rollouts.appended' && 'columns' in event.data && event.data.columns.sentAsSteps;
  if (!sentAsSteps) return stored.equals(eventBodyHash(event.type, event.data));
  const asSent = validateEvent(wireEvent({ ...event, body }), 'server');
  if (!asSent.ok)
    throw new Error(`steps put back from a body do not validate: ${asSent.issue.message}`);
  return stored.equals(eventBodyHash(asSent.event.type, asSent.event.data));
}

/** The data without its steps (they are in the body). */
function skeleton(event: ValidEvent): unknown {
  if (event.type === 'steps.appended') {
    const { steps: _steps, ...rest } = event.data;
    return rest;
  }
  if (event.type !== 'rollouts.appended') return event.data;
  if ('columns' in event.data) {
    const { columns, ...rest } = event.data; // trajectories name their stepCount
    if (!columns.sentAsSteps) return rest;
    // Steps sent as objects: the skeleton the objects had (trajectories without a stepCount).
    return {
      iteration: rest.iteration,
      groups: rest.groups.map((g) => ({
        id: g.id,
        trajectories: g.trajectories.map(({ stepCount: _n, ...t }) => t),
      })),
    };
  }
  return {
    iteration: event.data.iteration,
    groups: event.data.groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map(({ steps: _steps, ...t }) => t),
    })),
  };
}
