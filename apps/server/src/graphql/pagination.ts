import { z } from 'zod';
import { DomainError, ErrorCode } from '../errors/domain-error';

/** Page sizes are bounded so that no request can ask for an unbounded amount of work. */
export function pageSize(
  first: number | undefined,
  dflt: number,
  max: number,
  field: string,
): number {
  const n = first ?? dflt;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new DomainError(
      ErrorCode.InvalidInput,
      `${field}: first must be an integer from 1 to ${max}, got ${n}`,
    );
  }
  return n;
}

export function encodeCursor(parts: unknown[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/**
 * Reads a cursor back and checks it has the shape this field issues (a forged one is the caller's
 * mistake, never something for the database to choke on).
 */
export function decodeCursor<T>(cursor: string, field: string, shape: z.ZodType<T>): T {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parts = undefined;
  }
  const parsed = shape.safeParse(parts);
  if (parsed.success) return parsed.data;
  throw new DomainError(
    ErrorCode.InvalidInput,
    `${field}: "after" is not a cursor this API issued`,
  );
}

/** Cursor shapes: a run's (id, sort order); a position in an iteration; an event's seq. */
export const RUN_CURSOR = z.tuple([z.uuid(), z.string()]);
export const SEQ_CURSOR = z.tuple([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]);
export const POSITION_CURSOR = z.tuple([
  z
    .number()
    .int()
    .min(-1)
    .max(2 ** 31 - 1),
]);

/**
 * A page of a connection from `limit + 1` rows fetched: the extra row, if any, only says that
 * there is a next page.
 */
export function toPage<T>(
  rows: T[],
  limit: number,
  cursorOf: (last: T) => string,
): { nodes: T[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } {
  const nodes = rows.slice(0, limit);
  const last = nodes[nodes.length - 1];
  return {
    nodes,
    pageInfo: { hasNextPage: rows.length > limit, endCursor: last ? cursorOf(last) : null },
  };
}
