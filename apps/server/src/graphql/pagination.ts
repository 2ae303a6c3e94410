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

export function decodeCursor(cursor: string, field: string): unknown[] {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(parts)) return parts;
  } catch {
    // fall through to the error below
  }
  throw new DomainError(
    ErrorCode.InvalidInput,
    `${field}: "after" is not a cursor this API issued`,
  );
}
