import { ensureDatabase, runMigrations } from '@creditlab/db';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A fresh, migrated database on the test run's server, for one spec file. */
export async function createTestDatabase(): Promise<string> {
  const admin = process.env.CREDITLAB_TEST_DATABASE_URL;
  if (!admin)
    throw new Error(
      'CREDITLAB_TEST_DATABASE_URL is not set: the Jest global setup starts the test database',
    );
  const url = await ensureDatabase(admin, `test_${randomBytes(6).toString('hex')}`);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await runMigrations(pool);
  } finally {
    await pool.end();
  }
  return url;
}
