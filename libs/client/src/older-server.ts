import { CreditlabApiError } from './client-errors';

/**
 * How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns:
 * it reads one with no steps (the same words as a trajectory sent with neither steps nor columns).
 */
const STEPS_MISSING = /^data\.groups\[\d+\]\.trajectories\[\d+\]\.steps$/;
const STEPS_MISSING_REASON = 'required array is missing';

/**
 * The refusal `e` of a request of `lines` (its NDJSON lines, in order), with advice if it is that of a
 * server older than columnar steps refusing one: nothing in the server's own message says why.
 */
export function olderServerAdvice(e: unknown, lines: readonly Uint8Array[]): unknown {
  if (!(e instanceof CreditlabApiError) || e.status !== 400) return e;
  const { line, path, reason } = e.body;
  if (typeof line !== 'number' || typeof path !== 'string') return e;
  if (!STEPS_MISSING.test(path) || reason !== STEPS_MISSING_REASON) return e;
  const data = eventData(lines[line - 1]);
  if (data === null || typeof data !== 'object' || !('columns' in data)) return e;
  return new CreditlabApiError(
    e.status,
    e.body,
    'the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: ' +
      'update the server, or send steps as objects (rolloutEvents(…, { columnar: false }), or ' +
      'CREDITLAB_COLUMNAR_STEPS=0 in the environment)',
  );
}

/** The `data` of an NDJSON line (UTF-8), if it parses. */
function eventData(line: Uint8Array | undefined): unknown {
  try {
    return line === undefined
      ? undefined
      : (
          JSON.parse(Buffer.from(line.buffer, line.byteOffset, line.length).toString()) as {
            data?: unknown;
          }
        ).data;
  } catch {
    return undefined; // the server named a line the client sent: it parses, unless given as text
  }
}
