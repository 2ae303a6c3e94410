import { HttpException, Logger } from '@nestjs/common';
import { isDatabaseUnavailable, isRecoveryConflict, isStatementTimeout } from './database-errors';
import { DomainError, ErrorCode } from './domain-error';

const logger = new Logger('errors');

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
  if (isRecoveryConflict(e)) {
    logger.warn(`read replica conflict: ${(e as Error).message}`);
    return new DomainError(
      ErrorCode.DatabaseUnavailable,
      "the read replica cancelled this query to replay the primary's changes (conflict with recovery); retry it",
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
