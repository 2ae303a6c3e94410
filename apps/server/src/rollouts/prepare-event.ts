import { validateEvent, type ValidEvent } from '@creditlab/events';
import { bodyOf, eventDigest } from './event-digest';

/** An event checked and ready for the log: where it came from, what it is, its body and digest. */
export interface PreparedEvent {
  position: number;
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
  const result = validateEvent(value, from);
  if (!result.ok) return { path: result.issue.path, reason: result.issue.message };
  const body = bodyOf(result.event);
  return { position, event: result.event, body, hash: eventDigest(result.event, body) };
}

export function isIssue(checked: PreparedEvent | EventIssue): checked is EventIssue {
  return 'reason' in checked;
}
