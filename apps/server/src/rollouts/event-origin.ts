/**
 * Where a request's events come from, as its refusals tell it: the lines of an NDJSON body, the items
 * of GraphQL's `events` list, or an event the server writes for the request (the caller never sent
 * it, so a refusal names it and gives no line).
 */
export interface EventOrigin {
  /** How a message names the event at `position` (1-based, in the order the events came). */
  name(position: number): string;
  /** Where it is, for a refusal's details. */
  place(position: number): { line?: number; index?: number };
}

export const BODY_LINES: EventOrigin = {
  name: (position) => `line ${position}`,
  place: (position) => ({ line: position }),
};

export const EVENTS_LIST: EventOrigin = {
  name: (position) => `events[${position - 1}]`,
  place: (position) => ({ index: position - 1 }),
};

export const serverEvent = (type: string): EventOrigin => ({
  name: () => `the ${type} event this request records`,
  place: () => ({}),
});
