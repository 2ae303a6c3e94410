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

/** Prisma's codes for a database it cannot reach, that timed out, or that closed the connection. */
const PRISMA_CONNECTION_CODES = new Set(['P1001', 'P1002', 'P1017']);
/** Prisma driver adapter error kinds for the same (`meta.driverAdapterError.cause.kind`). */
const ADAPTER_CONNECTION_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
]);

interface ErrorShape {
  code?: unknown;
  syscall?: unknown;
  kind?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: unknown };
}

function isConnectionError({ code, syscall, kind, message }: ErrorShape): boolean {
  if (typeof code === 'string') {
    if (code.startsWith('08') || ['57P01', '57P02', '57P03'].includes(code)) return true;
    if (CONNECTION_ERRNOS.has(code) || PRISMA_CONNECTION_CODES.has(code)) return true;
    // A Unix socket that is not there: no PostgreSQL runs on it (pg says `syscall`; Prisma, which
    // passes the error on with its code, only its message).
    if (code === 'ENOENT' && (syscall === 'connect' || String(message).includes('connect ENOENT')))
      return true;
  }
  if (typeof kind === 'string' && ADAPTER_CONNECTION_KINDS.has(kind)) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.some((m) => message.includes(m));
}

/**
 * Whether an error means "PostgreSQL cannot be reached" rather than "this request is wrong":
 * SQLSTATE class 08 (connection exception), 57P01–57P03 (shutting down, crashed, cannot connect
 * now), a refused or reset socket or a Unix socket that is not there, pg's messages for a connection that ended, Prisma's P1001
 * (cannot reach), P1002 (timed out) and P1017 (connection closed). Prisma's driver adapter wraps the
 * pg error as its `cause`, or (a known request error) as `meta.driverAdapterError`.
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  return someInChain(e, isConnectionError);
}

/** PostgreSQL stopped a statement at statement_timeout (SQLSTATE 57014, "canceling statement due to statement timeout"). */
function isStatementTimeout(e: unknown): boolean {
  return someInChain(
    e,
    ({ code, message }) => code === '57014' && String(message).includes('statement timeout'),
  );
}

/**
 * Whether `test` holds for the error or one of those it wraps: its `cause`, or (Prisma's driver
 * adapter, a known request error) `meta.driverAdapterError`; ten at most.
 */
function someInChain(e: unknown, test: (shape: ErrorShape) => boolean): boolean {
  const pending: unknown[] = [e];
  for (let seen = 0; pending.length && seen < 10; seen++) {
    const err = pending.shift();
    if (!err || typeof err !== 'object') continue;
    const shape = err as ErrorShape;
    if (test(shape)) return true;
    pending.push(shape.cause, shape.meta?.driverAdapterError);
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
  if (isStatementTimeout(e)) {
    logger.warn(`statement timeout: ${(e as Error).message}`);
    return new DomainError(
      ErrorCode.StatementTimeout,
      'a database statement of this request ran longer than the server allows (CREDITLAB_STATEMENT_TIMEOUT_SECONDS) and was stopped; ask for less at once, or retry',
      requestId ? { requestId } : {},
    );
  }
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
