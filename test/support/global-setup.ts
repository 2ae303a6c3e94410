// Relative import: Jest loads global setup without moduleNameMapper.
import { startEmbeddedPostgres } from '../../libs/db/src/embedded-postgres';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free-port';

/**
 * One PostgreSQL server per test run (the embedded one, in a fresh data
 * directory), unless CREDITLAB_TEST_DATABASE_URL names a server to use. Spec
 * files then create their own database on it (test/support/test-database.ts).
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.CREDITLAB_TEST_DATABASE_URL) return;
  const root = await mkdtemp(path.join(tmpdir(), 'creditlab-test-'));
  await chmod(root, 0o755); // PostgreSQL runs as its own user and must reach pg/ inside
  const dataDir = path.join(root, 'pg');
  const pg = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  process.env.CREDITLAB_TEST_DATABASE_URL = pg.url;
  (globalThis as { __creditlabTestPg?: { stop(): Promise<void> } }).__creditlabTestPg = pg;
}
