import type { ClientEvent } from '@creditlab/events';
import { CreditlabApiError } from './client-errors';

/**
 * How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns:
 * it reads one with no steps (the same words as a trajectory sent with neither steps nor columns).
 */
const STEPS_MISSING = /^data\.groups\[\d+\]\.trajectories\[\d+\]\.steps$/;
const STEPS_MISSING_REASON = 'required array is missing';

/**
 * The refusal `e` of a request of `events` (one per line, in order), with advice if it is that of a
 * server older than columnar steps refusing one: nothing in the server's own message says why.
 */
export function olderServerAdvice(e: unknown, events: readonly ClientEvent[]): unknown {
  if (!(e instanceof CreditlabApiError) || e.status !== 400) return e;
  const { line, path, reason } = e.body;
  if (typeof line !== 'number' || typeof path !== 'string') return e;
  if (!STEPS_MISSING.test(path) || reason !== STEPS_MISSING_REASON) return e;
  const data = events[line - 1]?.data;
  if (data === null || typeof data !== 'object' || !('columns' in data)) return e;
  return new CreditlabApiError(
    e.status,
    e.body,
    'the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: ' +
      'update the server, or send steps as objects (rolloutEvents(…, { columnar: false }), or ' +
      'CREDITLAB_COLUMNAR_STEPS=0 in the environment)',
  );
}
