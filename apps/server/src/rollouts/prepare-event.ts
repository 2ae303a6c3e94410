import { validateEvent, type ValidEvent } from '@creditlab/events';
import { eventDigest, logBodiesOf } from './event-digest';
import { stepObjectsAsColumns } from './step-objects-as-columns';

/** An event checked and ready for the log: where it came from, what it is, its body and digest. */
export interface PreparedEvent {
  position: number;
  /** The event checked; a rollouts.appended's steps as columns, whichever form they came in. */
  event: ValidEvent;
  /** Its steps as the log stores them (step-bearing events), else null. */
  body: Buffer | null;
  /** eventDigest of the event: tells a retry (same content) from a reused id (other content). */
  hash: Buffer;
}

/** Why an event was refused: the field (a path into the event) and what is wrong with it. */
export interface EventIssue {
  path: string;
  reason: string;
}

/**
 * An event checked (what it is), with its body as the log stores it and its digest, or what is
 * wrong with it: all that depends on the event alone, so it needs no run, no lock and no database,
 * and can run on another thread (prepare-thread.ts).
 */
export function checkEvent(
  position: number,
  value: unknown,
  from: 'client' | 'server',
): PreparedEvent | EventIssue {
  let event = stepObjectsAsColumns(value);
  if (!event) {
    const result = validateEvent(value, from);
    if (!result.ok) return { path: result.issue.path, reason: result.issue.message };
    event = result.event;
  }
  const { canonical, stored, held } = logBodiesOf(event);
  return { position, event: held, body: stored, hash: eventDigest(held, canonical) };
}

export function isIssue(checked: PreparedEvent | EventIssue): checked is EventIssue {
  return 'reason' in checked;
}

/**
 * An event of a request as the appender takes it: a function that checks it (or throws why it is
 * refused), called once the run is locked, with the event as parsed where the request's thread has
 * it (`value`: the first event, which first-event-lookup.ts reads ahead of the check).
 */
export type PendingEvent = (() => PreparedEvent) & { value?: unknown };

/** `prepare`, with the event as parsed. */
export const pendingEvent = (prepare: () => PreparedEvent, value: unknown): PendingEvent =>
  Object.assign(prepare, { value });

/** What was made of one line of a body: its prepared event, or why it is refused. */
export type PreparedLine =
  | PreparedEvent
  | ({ position: number } & EventIssue)
  | { position: number; notJson: string }
  | { position: number; notUtf8: true }
  | { position: number; failed: string };

/**
 * One line of a body parsed and checked, whatever is wrong with it told as data rather than
 * thrown: the preparing thread's work (prepare-thread-entry.ts), which answers for many lines at once.
 */
export function prepareLine(
  position: number,
  text: string | null,
  from: 'client' | 'server',
): PreparedLine {
  if (text === null) return { position, notUtf8: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { position, notJson: (e as Error).message };
  }
  try {
    const checked = checkEvent(position, value, from);
    return isIssue(checked) ? { position, ...checked } : withoutWireColumns(checked);
  } catch (e) {
    // A bug, not the client's: answered 500 by the request, not by a lost thread.
    return { position, failed: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
}

/**
 * A prepared event without its columns as sent (base64 strings, lists of numbers), once its body is
 * made of them: the request's thread uses only the decoded columns, and reading both back from the
 * preparing thread cost it 0.37 µs per step as columns against 0.27 (bench:ingest-server's read back).
 */
export function withoutWireColumns(line: PreparedEvent): PreparedEvent {
  if (line.event.type !== 'rollouts.appended') return line;
  const data = line.event.data;
  if (!('columns' in data)) return line;
  const { wire: _sent, ...columns } = data.columns;
  return { ...line, event: { ...line.event, data: { ...data, columns } } };
}

/** A Buffer over the bytes of a Uint8Array (what a Buffer sent between threads arrives as). */
export const asBuffer = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
