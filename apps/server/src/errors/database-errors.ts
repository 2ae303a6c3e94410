/**
 * What a database error means for the caller, from the error alone (pg's, or Prisma's wrapping of
 * it): the database unreachable, a statement stopped at its time limit, or a query a read replica
 * cancelled. Free of Nest, so that tests can classify real errors with it.
 */

/** Node's socket errors that mean the database's connection is gone or was never made. */
const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
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
  /** Prisma's driver adapter keeps PostgreSQL's own code and message under these names. */
  originalCode?: unknown;
  originalMessage?: unknown;
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

/**
 * A hot standby (the read replica) cancelled a query because replaying the primary's changes
 * needed what it read (40001, or 40P01 for a deadlock with replay; "… conflict with recovery").
 */
export function isRecoveryConflict(e: unknown): boolean {
  return someInChain(e, ({ code, message, originalCode, originalMessage }) =>
    [code, originalCode].some(
      (c, k) =>
        (c === '40001' || c === '40P01') &&
        String(k === 0 ? message : originalMessage).includes('conflict with recovery'),
    ),
  );
}

/** PostgreSQL stopped a statement at statement_timeout (SQLSTATE 57014, "canceling statement due to statement timeout"). */
export function isStatementTimeout(e: unknown): boolean {
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
