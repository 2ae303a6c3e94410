/** What can go wrong for a caller, independent of transport (HTTP status and GraphQL code at the edge). */
export enum ErrorCode {
  RunNotFound = 'RUN_NOT_FOUND',
  NotFound = 'NOT_FOUND',
  InvalidInput = 'INVALID_INPUT',
  InvalidEvent = 'INVALID_EVENT',
  PayloadTooLarge = 'PAYLOAD_TOO_LARGE',
  UnsupportedMediaType = 'UNSUPPORTED_MEDIA_TYPE',
  Unauthenticated = 'UNAUTHENTICATED',
  Forbidden = 'FORBIDDEN',
  RateLimited = 'RATE_LIMITED',
  Conflict = 'CONFLICT',
}

export const HTTP_STATUS: Record<ErrorCode, number> = {
  [ErrorCode.RunNotFound]: 404,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.InvalidInput]: 400,
  [ErrorCode.InvalidEvent]: 400,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.Unauthenticated]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.Conflict]: 409,
};

export const GRAPHQL_CODE: Record<ErrorCode, string> = {
  [ErrorCode.RunNotFound]: 'NOT_FOUND',
  [ErrorCode.NotFound]: 'NOT_FOUND',
  [ErrorCode.InvalidInput]: 'BAD_USER_INPUT',
  [ErrorCode.InvalidEvent]: 'BAD_USER_INPUT',
  [ErrorCode.PayloadTooLarge]: 'PAYLOAD_TOO_LARGE',
  [ErrorCode.UnsupportedMediaType]: 'BAD_USER_INPUT',
  [ErrorCode.Unauthenticated]: 'UNAUTHENTICATED',
  [ErrorCode.Forbidden]: 'FORBIDDEN',
  [ErrorCode.RateLimited]: 'RATE_LIMITED',
  [ErrorCode.Conflict]: 'CONFLICT',
};

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra machine-readable facts (line, path, ...) echoed in the error body. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The one answer for a run the caller may not see, whether it does not exist or belongs to another
 * project: the two must be indistinguishable.
 */
export function runNotFound(runId: string): DomainError {
  return new DomainError(ErrorCode.RunNotFound, `run ${JSON.stringify(runId)} not found`, {
    runId,
  });
}
