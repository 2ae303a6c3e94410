import type { StepPayload } from '@creditlab/events';

/**
 * The body of a step-bearing event, as the log keeps it (`events.body`): the event's steps, one
 * array per trajectory slice in the order the event names them, as JSON with vectors as base64
 * little-endian float32 — the compact form clients may send too, so a stored event put back
 * together validates exactly as it did on arrival.
 */
export function encodeStepsBody(slices: StepPayload[][]): Buffer {
  return Buffer.from(JSON.stringify(slices.map((steps) => steps.map(compactStep))), 'utf8');
}

function compactStep(s: StepPayload): Record<string, unknown> {
  return {
    ...s,
    tokenLogprobs: s.tokenLogprobs && base64(s.tokenLogprobs),
    embedding: s.embedding && base64(s.embedding),
  };
}

const base64 = (xs: Float32Array) =>
  Buffer.from(xs.buffer, xs.byteOffset, xs.byteLength).toString('base64');

interface StoredSlice {
  id: string;
  outcome?: string;
  firstStepIndex?: number;
  stepCount?: number;
}

/**
 * An event as its client sent it, from what the log stores: the data (which for step-bearing
 * events names the slices, with the server's firstStepIndex/stepCount) and the body (their steps).
 */
export function wireEvent(stored: {
  id: string;
  type: string;
  data: Record<string, unknown>;
  body: Buffer | null;
}): { id: string; type: string; data: unknown } {
  const { id, type, data } = stored;
  if (type !== 'rollouts.appended' && type !== 'steps.appended') return { id, type, data };
  const slices = JSON.parse((stored.body ?? Buffer.from('[]')).toString('utf8')) as unknown[][];
  if (type === 'steps.appended') {
    const { stepCount: _n, ...rest } = data;
    return { id, type, data: { ...rest, steps: slices[0] ?? [] } };
  }
  let n = 0;
  const groups = data.groups as { id: string; trajectories: StoredSlice[] }[];
  return {
    id,
    type,
    data: {
      iteration: data.iteration,
      groups: groups.map((g) => ({
        id: g.id,
        trajectories: g.trajectories.map((t) => ({
          id: t.id,
          ...(t.outcome ? { outcome: t.outcome } : {}),
          steps: slices[n++] ?? [],
        })),
      })),
    },
  };
}
