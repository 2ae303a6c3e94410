import { HttpException, Logger } from '@nestjs/common';
import { DomainError, ErrorCode } from './domain-error';

const logger = new Logger('errors');

/** Node's socket errors that mean the database's connection is gone or was never made. */
const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
]);
/** pg's own messages for a connection that ended or could not be made in time. */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection ended unexpectedly',
];

/**
 * Whether an error means "PostgreSQL cannot be reached" rather than "this request is wrong":
 * SQLSTATE class 08 (connection exception), 57P01–57P03 (shutting down, cannot connect now), a
 * refused or reset socket, or pg's messages for a connection that ended. Prisma's driver adapter
 * wraps the pg error as its `cause`.
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (let err = e, depth = 0; err && typeof err === 'object' && depth < 5; depth++) {
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(code)) return true;
      if (CONNECTION_ERRNOS.has(code)) return true;
    }
    if (typeof message === 'string' && CONNECTION_MESSAGES.some((m) => message.includes(m)))
      return true;
    err = (err as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * What a caller may be told about any error: a DomainError as it is; Nest's own HTTP errors
 * (an unknown route, a path parameter that is not a number) by their status; an unreachable
 * database as 503; anything else as a bare 500 that names the request id. Stack traces, file
 * paths, SQL and Prisma call text go to the log only, whatever NODE_ENV says.
 */
export function publicError(e: unknown, requestId?: string): DomainError | HttpException {
  if (e instanceof DomainError || e instanceof HttpException) return e;
  if (isDatabaseUnavailable(e)) {
    logger.warn(`database unavailable: ${(e as Error)?.message ?? String(e)}`);
    return new DomainError(
      ErrorCode.DatabaseUnavailable,
      'the database is unavailable; retry in a few seconds',
    );
  }
  logger.error(e instanceof Error ? e : new Error(String(e)));
  return new DomainError(
    ErrorCode.Internal,
    `internal error${requestId ? ` (request id ${requestId})` : ''}; the server log has the details`,
    requestId ? { requestId } : {},
  );
}
