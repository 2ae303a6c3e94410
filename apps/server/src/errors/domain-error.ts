/** What can go wrong for a caller, independent of transport (HTTP status and GraphQL code at the edge). */
export enum ErrorCode {
  RunNotFound = 'RUN_NOT_FOUND',
  NotFound = 'NOT_FOUND',
  InvalidInput = 'INVALID_INPUT',
  InvalidEvent = 'INVALID_EVENT',
  PayloadTooLarge = 'PAYLOAD_TOO_LARGE',
  /** The request line and headers are more than the server reads (431). */
  HeadersTooLarge = 'HEADERS_TOO_LARGE',
  UnsupportedMediaType = 'UNSUPPORTED_MEDIA_TYPE',
  Unauthenticated = 'UNAUTHENTICATED',
  Forbidden = 'FORBIDDEN',
  RateLimited = 'RATE_LIMITED',
  Conflict = 'CONFLICT',
  /** Events sent to a finished run (run.resumed reopens it). */
  RunFinished = 'RUN_FINISHED',
  /** The client stopped sending a request body it had started. */
  RequestTimeout = 'REQUEST_TIMEOUT',
  /** The connection closed before the request body ended: nobody is left to answer. */
  ClientClosedRequest = 'CLIENT_CLOSED_REQUEST',
  /** Too many requests of one kind from one key at once (not the per-minute rate). */
  TooManyConcurrent = 'TOO_MANY_CONCURRENT_REQUESTS',
  /** PostgreSQL cannot be reached: retry later. */
  DatabaseUnavailable = 'DATABASE_UNAVAILABLE',
  /** The checkpoint bucket (CREDITLAB_CHECKPOINT_BUCKET) failed a request: retry later. */
  StorageUnavailable = 'STORAGE_UNAVAILABLE',
  /** A database statement ran past CREDITLAB_STATEMENT_TIMEOUT_SECONDS and was stopped. */
  StatementTimeout = 'STATEMENT_TIMEOUT',
  /** This process already gives a kind of request all it allows (memory, connections): retry shortly. */
  ServerBusy = 'SERVER_BUSY',
  /** A fault of the server; the log has the details under the request id. */
  Internal = 'INTERNAL',
}

export const HTTP_STATUS: Record<ErrorCode, number> = {
  [ErrorCode.RunNotFound]: 404,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.InvalidInput]: 400,
  [ErrorCode.InvalidEvent]: 400,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.HeadersTooLarge]: 431,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.Unauthenticated]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.Conflict]: 409,
  [ErrorCode.RunFinished]: 409,
  [ErrorCode.RequestTimeout]: 408,
  [ErrorCode.ClientClosedRequest]: 400, // never seen by the client; counted and logged under its code
  [ErrorCode.TooManyConcurrent]: 429,
  [ErrorCode.DatabaseUnavailable]: 503,
  [ErrorCode.StorageUnavailable]: 503,
  [ErrorCode.StatementTimeout]: 503,
  [ErrorCode.ServerBusy]: 503,
  [ErrorCode.Internal]: 500,
};

export const GRAPHQL_CODE: Record<ErrorCode, string> = {
  [ErrorCode.RunNotFound]: 'NOT_FOUND',
  [ErrorCode.NotFound]: 'NOT_FOUND',
  [ErrorCode.InvalidInput]: 'BAD_USER_INPUT',
  [ErrorCode.InvalidEvent]: 'BAD_USER_INPUT',
  [ErrorCode.PayloadTooLarge]: 'PAYLOAD_TOO_LARGE',
  [ErrorCode.HeadersTooLarge]: 'PAYLOAD_TOO_LARGE',
  [ErrorCode.UnsupportedMediaType]: 'BAD_USER_INPUT',
  [ErrorCode.Unauthenticated]: 'UNAUTHENTICATED',
  [ErrorCode.Forbidden]: 'FORBIDDEN',
  [ErrorCode.RateLimited]: 'RATE_LIMITED',
  [ErrorCode.Conflict]: 'CONFLICT',
  [ErrorCode.RunFinished]: 'CONFLICT',
  [ErrorCode.RequestTimeout]: 'REQUEST_TIMEOUT',
  [ErrorCode.ClientClosedRequest]: 'BAD_REQUEST',
  [ErrorCode.TooManyConcurrent]: 'RATE_LIMITED',
  [ErrorCode.DatabaseUnavailable]: 'DATABASE_UNAVAILABLE',
  [ErrorCode.StorageUnavailable]: 'STORAGE_UNAVAILABLE',
  [ErrorCode.StatementTimeout]: 'STATEMENT_TIMEOUT',
  [ErrorCode.ServerBusy]: 'SERVER_BUSY',
  [ErrorCode.Internal]: 'INTERNAL_SERVER_ERROR',
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

/** A request body that ended before the client finished sending it: not the server's fault. */
export function bodyCutShort(): DomainError {
  return new DomainError(
    ErrorCode.ClientClosedRequest,
    'request body ended before the client finished sending it',
  );
}

/** A request body that brought nothing for `idleMs` (`what`: what did not arrive). */
export function bodyWentQuiet(what: string, idleMs: number): DomainError {
  return new DomainError(
    ErrorCode.RequestTimeout,
    `no ${what} arrived for ${idleMs / 1000} s; send the body without pauses`,
    { idleSeconds: idleMs / 1000 },
  );
}
