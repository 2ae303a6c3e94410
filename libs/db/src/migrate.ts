import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../migrations');

/** Arbitrary constant key for pg_advisory_xact_lock: one migrator per database at a time. */
const MIGRATION_LOCK_KEY = 0x43726564; // "Cred"

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

/**
 * Applies `migrations/<timestamp>_<name>/migration.sql` in name order, each
 * once and in its own transaction, so that two servers starting together do not
 * race. A migration that was applied and then edited is an error (its checksum is
 * recorded), not silently skipped.
 *
 * The lock is a transaction's (`pg_advisory_xact_lock`), taken again by each
 * migration's transaction, which then asks whether another process applied it
 * meanwhile. A session lock would not hold behind a transaction-mode pooler,
 * which may send the lock, the migrations and the unlock to different server
 * connections: two processes would apply the same migration, and a lock left on
 * an idle server connection would block every later start (docs/scaling.md).
 */
export async function runMigrations(
  pool: pg.Pool,
  dir = MIGRATIONS_DIR,
  {
    onWait = () => undefined,
  }: {
    /** Told, when the lock is held elsewhere, who holds it (as PostgreSQL shows it), before the wait. */
    onWait?: (line: string) => void;
  } = {},
): Promise<MigrationResult> {
  const migrations = await readMigrations(dir);
  const client = await pool.connect();
  const underLock = <T>(work: () => Promise<T>) => lockedTransaction(client, work, onWait);
  /**
   * Applies `m` in a transaction of its own, under the lock, unless another process did since this
   * one looked; resolves with the checksum it was recorded with then, or undefined if applied here.
   */
  const applyUnlessApplied = (m: Migration) =>
    underLock(async () => {
      const other = await client.query<{ checksum: string }>(
        'SELECT checksum FROM _migrations WHERE name = $1',
        [m.name],
      );
      if (other.rows[0]) return other.rows[0].checksum;
      await client.query(m.sql);
      await client.query('INSERT INTO _migrations (name, checksum) VALUES ($1, $2)', [
        m.name,
        m.checksum,
      ]);
      return undefined;
    });
  let failure: Error | undefined;
  try {
    const recorded = await underLock(async () => {
      await client.query(`CREATE TABLE IF NOT EXISTS _migrations (
        name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const rows = await client.query<{ name: string; checksum: string }>(
        'SELECT name, checksum FROM _migrations',
      );
      return new Map(rows.rows.map((r) => [r.name, r.checksum]));
    });
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const m of migrations) {
      const before =
        recorded.get(m.name) ??
        (await applyUnlessApplied(m).catch((e: Error) => {
          throw new Error(`migration ${m.name} failed: ${e.message}`);
        }));
      if (before === undefined) result.applied.push(m.name);
      else if (before !== m.checksum)
        throw new Error(`migration ${m.name} changed after it was applied`);
      else result.alreadyApplied.push(m.name);
    }
    return result;
  } catch (e) {
    failure = e as Error; // the connection may be what failed: it is not given back to the pool
    throw e;
  } finally {
    client.release(failure);
  }
}

async function readMigrations(dir: string): Promise<Migration[]> {
  return Promise.all(
    (await readdir(dir)).sort().map(async (name) => {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * `work` in a transaction that holds the migration lock. Read committed whatever the database's
 * default, so that what follows the lock sees what the process that held it before committed (a
 * repeatable-read snapshot would date from before the wait). No time limit: neither the role's nor
 * one a pooler's server connection carries over from another client may cancel a migration halfway.
 */
async function lockedTransaction<T>(
  client: pg.PoolClient,
  work: () => Promise<T>,
  onWait: (line: string) => void,
): Promise<T> {
  await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    const results = (await client.query(
      `SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0;
       SELECT pg_try_advisory_xact_lock(${MIGRATION_LOCK_KEY}) AS got`,
    )) as unknown as pg.QueryResult<{ got: boolean }>[];
    if (!results.at(-1)?.rows[0]?.got) {
      onWait(await lockHolder(client));
      await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    }
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/**
 * Who holds the migration lock, for a process that is about to wait for it: a start that seems to
 * hang says why (another process migrating, or a session lock an older version left on a pooler's
 * idle server connection, which only that connection's end releases).
 */
async function lockHolder(client: pg.PoolClient): Promise<string> {
  const held = await client.query<{
    pid: number;
    app: string;
    state: string | null;
    seconds: number | null;
  }>(
    `SELECT a.pid, a.application_name AS app, a.state,
            extract(epoch FROM now() - a.xact_start)::int AS seconds
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MIGRATION_LOCK_KEY],
  );
  const h = held.rows[0];
  const who = h
    ? `PostgreSQL backend ${h.pid} (${h.app || 'no application name'}, ${h.state ?? 'state not shown to this role'}${h.seconds === null ? '' : `, its transaction ${h.seconds} s old`})`
    : 'a backend that has just let it go';
  return `waiting for the migration lock, held by ${who}: another process is migrating this database, or, behind a transaction-mode pooler, a process of a version before 2026-12-06 left its session lock on a server connection (docs/scaling.md)`;
}
