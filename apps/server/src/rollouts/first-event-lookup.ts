import { isUuid } from '../database/uuid';
import { textIdsOf } from './text-dictionary';

/**
 * What the request's first event needs looked up — whether its id is stored already, and which of
 * its texts the run has — asked in the message that begins the transaction and locks the run
 * (run-lock.ts), rather than in a round trip of its own once the event is checked: PostgreSQL runs
 * it once the lock is granted, while this thread checks the event. Taken from the event as parsed,
 * not yet checked, so only what is plainly an event id (a UUID) and plainly texts (strings) is
 * asked about; the chunk's own lookup asks for whatever this did not. For a request of one
 * iteration (a trainer's) that lookup is then not needed at all.
 */
export interface FirstEventLookup {
  /** The statement, all its values inlined (the lock's message is in the simple protocol). */
  sql: string;
  /** The event id asked about (lower case), if any. */
  eventId: string | undefined;
  /** The text ids asked about (decimal). */
  textIds: string[];
}

/** Texts asked about at most: their ids are inlined in the statement's text. */
const MAX_TEXTS = 4096;

/** The look-up for a request's first event as parsed (`value`), or undefined if nothing is plain enough to ask. */
export function firstEventLookup(runId: string, value: unknown): FirstEventLookup | undefined {
  if (!isUuid(runId) || typeof value !== 'object' || value === null) return undefined;
  const { id, data } = value as { id?: unknown; data?: unknown };
  const eventId = typeof id === 'string' && isUuid(id) ? id.toLowerCase() : undefined;
  const texts = textsIn(data);
  const textIds = texts && texts.length <= MAX_TEXTS ? textIdsOf(runId, texts) : [];
  if (!eventId && textIds.length === 0) return undefined;
  const parts: string[] = [];
  // The same rows as the chunk's lookup (append-session.ts, STORED_EVENTS_AND_TEXTS_SQL).
  if (eventId)
    parts.push(
      `SELECT id::text AS id, seq, body_hash, false AS text FROM events WHERE run_id = '${runId}' AND id = '${eventId}'`,
    );
  if (textIds.length > 0)
    parts.push(
      `SELECT id::text AS id, NULL::bigint AS seq, NULL::bytea AS body_hash, true AS text FROM texts WHERE run_id = '${runId}' AND id = ANY('{${textIds.join(',')}}'::bigint[])`,
    );
  return { sql: parts.join(' UNION ALL '), eventId, textIds };
}

/** The state, action and next-state texts of a rollouts.appended as parsed (columns or step objects), else undefined. */
function textsIn(data: unknown): string[] | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { columns, groups } = data as { columns?: unknown; groups?: unknown };
  if (typeof columns === 'object' && columns !== null) {
    const texts = (columns as { texts?: unknown }).texts;
    return Array.isArray(texts) && texts.every((t) => typeof t === 'string') ? texts : undefined;
  }
  if (!Array.isArray(groups)) return undefined;
  const texts = new Set<string>();
  for (const g of groups as unknown[]) {
    const trajectories = (g as { trajectories?: unknown } | null)?.trajectories;
    if (!Array.isArray(trajectories)) return undefined;
    for (const t of trajectories as unknown[]) {
      const steps = (t as { steps?: unknown } | null)?.steps;
      if (!Array.isArray(steps)) return undefined;
      for (const s of steps as unknown[]) {
        if (typeof s !== 'object' || s === null) return undefined;
        const { state, action, nextState } = s as Record<string, unknown>;
        for (const text of [state, action, nextState])
          if (typeof text === 'string') texts.add(text);
        if (texts.size > MAX_TEXTS) return undefined;
      }
    }
  }
  return [...texts];
}
