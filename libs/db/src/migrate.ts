import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../migrations');

/** Arbitrary constant key for pg_advisory_lock: one migrator per database at a time. */
const MIGRATION_LOCK_KEY = 0x43726564; // "Cred"

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

/**
 * Applies `migrations/<timestamp>_<name>/migration.sql` in name order, each
 * once and in its own transaction, under a session advisory lock so that two
 * servers starting together do not race. A migration that was applied and then
 * edited is an error (its checksum is recorded), not silently skipped.
 */
export async function runMigrations(pool: pg.Pool, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS _migrations (
      name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Map(
      (
        await client.query<{ name: string; checksum: string }>(
          'SELECT name, checksum FROM _migrations',
        )
      ).rows.map((r) => [r.name, r.checksum]),
    );
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const name of (await readdir(dir)).sort()) {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const recorded = done.get(name);
      if (recorded !== undefined) {
        if (recorded !== checksum)
          throw new Error(`migration ${name} changed after it was applied`);
        result.alreadyApplied.push(name);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO _migrations (name, checksum) VALUES ($1, $2)', [
          name,
          checksum,
        ]);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(e as Error).message}`);
      }
      result.applied.push(name);
    }
    return result;
  } finally {
    await client
      .query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      .catch(() => undefined);
    client.release();
  }
}
