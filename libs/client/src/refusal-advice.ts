import { CreditlabApiError } from './client-errors';
import { parsedLine } from './ndjson-lines';

/**
 * How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns:
 * it reads one with no steps (the same words as a trajectory sent with neither steps nor columns).
 */
const STEPS_MISSING = /^data\.groups\[\d+\]\.trajectories\[\d+\]\.steps$/;
const STEPS_MISSING_REASON = 'required array is missing';
/** How a server older than the `extra` column (before 2026-12-05) refuses one. */
const EXTRA_UNKNOWN = 'data.columns.extra';

/**
 * The refusal `e` of an append request of `lines` (its NDJSON lines, in order), with what the
 * client can add to the server's words: which event the refused line is (the server counts lines
 * within the request, which may join several calls' events; `eventsBefore` is how many of the
 * caller's events came before this request), and why, if it is a server older than columnar steps
 * or than their extra column refusing one (nothing in that server's own message says so).
 */
export function refusalWithAdvice(
  e: unknown,
  lines: readonly Uint8Array[],
  eventsBefore?: number,
): unknown {
  if (!(e instanceof CreditlabApiError)) return e;
  const { line, path, reason } = e.body;
  if (typeof line !== 'number') return e;
  const event = parsedLine(lines[line - 1]);
  if (event === undefined) return e;
  const advice: string[] = [];
  if (e.advice) advice.push(e.advice);
  // Why first, when the client can tell; then which event.
  const data = event.data;
  if (
    e.status === 400 &&
    typeof path === 'string' &&
    STEPS_MISSING.test(path) &&
    reason === STEPS_MISSING_REASON &&
    data !== null &&
    typeof data === 'object' &&
    'columns' in data
  )
    advice.push(
      'the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: ' +
        'update the server, or send steps as objects (rolloutEvents(…, { columnar: false }), or ' +
        'CREDITLAB_COLUMNAR_STEPS=0 in the environment)',
    );
  if (
    e.status === 400 &&
    path === EXTRA_UNKNOWN &&
    typeof reason === 'string' &&
    reason.startsWith('unknown column') &&
    hasExtraColumn(data)
  )
    advice.push(
      "the event on this line sends its steps' fields beyond rollout-batch/v1 in the extra column, " +
        'which servers before 2026-12-05 do not read: update the server, or send steps as objects ' +
        '(rolloutEvents(…, { columnar: false }), or CREDITLAB_COLUMNAR_STEPS=0 in the environment)',
    );
  const place =
    eventsBefore === undefined ? '' : ` (number ${eventsBefore + line} in the order given)`;
  if (typeof event.id === 'string') advice.push(`the refused line is event ${event.id}${place}`);
  return advice.length === 0 ? e : new CreditlabApiError(e.status, e.body, advice.join('; '));
}

/** Whether an event's data has steps as columns with an extra column. */
function hasExtraColumn(data: unknown): boolean {
  if (data === null || typeof data !== 'object' || !('columns' in data)) return false;
  const columns = data.columns;
  return columns !== null && typeof columns === 'object' && 'extra' in columns;
}
