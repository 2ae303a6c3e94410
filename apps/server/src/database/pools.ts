import pg from 'pg';

/** Where a pool reports connections it lost (the server's logger; this module stays free of Nest). */
export interface PoolLog {
  warn(message: string): void;
  debug(message: string): void;
}

/**
 * A pool of at most `max` connections to `url`, whose statements PostgreSQL stops after
 * `statementTimeoutMs` (0: no limit), and which survives connections that lose their server.
 *
 * The limit is PostgreSQL's own, so that a statement is stopped where it runs: a read whose plan
 * went wrong had run for minutes after its client left, and held the server's shutdown meanwhile.
 * It is set once a connection is open rather than sent among its start-up parameters, which
 * PgBouncer refuses (`unsupported startup parameter`) unless told to ignore them, and then drops.
 */
export function openPool(
  url: string,
  max: number,
  statementTimeoutMs: number,
  log: PoolLog,
  /** How long a new connection may take before its checkout fails (0: as long as the OS takes). */
  connectionTimeoutMs = 0,
): pg.Pool {
  // pg-pool awaits onConnect before it hands the connection out (and fails the checkout if it
  // rejects); @types/pg types it as returning void.
  const setUp: { onConnect?: (client: pg.ClientBase) => Promise<void> } =
    statementTimeoutMs > 0
      ? { onConnect: (client) => setStatementTimeout(client, statementTimeoutMs) }
      : {};
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectionTimeoutMs,
    ...setUp,
  });
  // A connection can lose its server at any time (PostgreSQL restarted or killed, a failover),
  // and pg reports that as an 'error' event: on the pool for an idle client, on the client itself
  // while it is checked out (a transaction between two statements). Unheard, either event would
  // end the process. The statement running fails with the error (a 503 for the request), pg-pool
  // drops the broken client when it is released, and the next query opens a new connection.
  pool.on('error', (e) => log.warn(`idle connection lost: ${e.message}`));
  pool.on('connect', (client) =>
    client.on('error', (e) => log.debug(`connection lost: ${e.message}`)),
  );
  return pool;
}

/** A session setting: a session pooler keeps it for as long as its client keeps the connection. */
async function setStatementTimeout(client: pg.ClientBase, ms: number): Promise<void> {
  // Whole milliseconds, rounded up: a limit under one must not become 0, which is none.
  await client.query(`SET statement_timeout = ${Math.ceil(ms)}`);
}
