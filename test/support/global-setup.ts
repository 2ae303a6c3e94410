// Relative imports: Jest loads global setup without moduleNameMapper.
import { startEmbeddedPostgres } from '../../libs/db/src/embedded-postgres';
import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free-port';
import { reapOrphans, track } from './process-registry';
import { startRunWatchdog } from './run-watchdog';
import { startSystemPostgres } from './system-postgres';
import { startPgBouncer } from './test-pgbouncer';

/**
 * One PostgreSQL server per test run (the embedded one, in a fresh data
 * directory), unless CREDITLAB_TEST_DATABASE_URL names a server to use, reached through a PgBouncer
 * when CREDITLAB_TEST_PGBOUNCER names one. Spec files then create their own database on it
 * (test/support/test-database.ts).
 * First, whatever an earlier run that was killed outright left running is stopped, and this run's
 * watchdog started, which stops what this run starts if it is killed outright.
 */
export default async function globalSetup(): Promise<void> {
  process.env.CREDITLAB_TEST_RUN = String(process.pid);
  await reapOrphans();
  await useScratchFolder();
  startRunWatchdog(process.pid);
  buildWebApp();
  if (!process.env.CREDITLAB_TEST_DATABASE_URL) await startTestPostgres();
  // The PostgreSQL itself, behind any PgBouncer: for specs that look at its locks or put a pooler of
  // their own in front of it.
  process.env.CREDITLAB_TEST_POSTGRES_URL = process.env.CREDITLAB_TEST_DATABASE_URL;
  const pgbouncer = process.env.CREDITLAB_TEST_PGBOUNCER;
  if (pgbouncer) {
    // Every spec through a session-mode PgBouncer (npm run test:pgbouncer; docs/scaling.md).
    const bouncer = await startPgBouncer(
      pgbouncer,
      process.env.CREDITLAB_TEST_DATABASE_URL as string,
      await freePort(),
    );
    process.env.CREDITLAB_TEST_DATABASE_URL = bouncer.url;
    (globalThis as { __creditlabTestPgBouncer?: TestPostgres }).__creditlabTestPgBouncer = bouncer;
  }
}

/** The run's PostgreSQL: the embedded one, or another version's (CREDITLAB_TEST_POSTGRES_BIN). */
async function startTestPostgres(): Promise<void> {
  const bin = process.env.CREDITLAB_TEST_POSTGRES_BIN;
  if (bin) {
    // Another PostgreSQL than the embedded one (npm run test:postgres15: Debian's postgresql-15).
    const pg = await startSystemPostgres(bin, await freePort());
    process.env.CREDITLAB_TEST_DATABASE_URL = pg.url;
    (globalThis as { __creditlabTestPg?: TestPostgres }).__creditlabTestPg = pg;
    return;
  }
  const root = await mkdtemp(path.join(tmpdir(), 'creditlab-test-'));
  await chmod(root, 0o755); // PostgreSQL runs as its own user and must reach pg/ inside
  const dataDir = path.join(root, 'pg');
  const pg = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  const postmaster = Number(
    (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0],
  );
  track(postmaster, `test PostgreSQL in ${dataDir}`, false, 'run');
  process.env.CREDITLAB_TEST_DATABASE_URL = pg.url;
  (globalThis as { __creditlabTestPg?: TestPostgres }).__creditlabTestPg = { ...pg, root };
}

/**
 * Every temporary file of the run — specs' folders, servers', CLIs', the browser's, Python's — goes
 * into one folder that global teardown removes: TMPDIR, which Node's os.tmpdir(), Python's tempfile
 * and Chromium all follow, is set for the workers and every process they start. Readable by all,
 * since PostgreSQL runs as its own user in folders some specs make there.
 */
async function useScratchFolder(): Promise<void> {
  const scratch = await mkdtemp(path.join(tmpdir(), 'creditlab-test-run-'));
  await chmod(scratch, 0o755);
  process.env.CREDITLAB_TEST_SYSTEM_TMPDIR = tmpdir();
  process.env.TMPDIR = scratch;
  (globalThis as { __creditlabScratch?: string }).__creditlabScratch = scratch;
}

/**
 * The web app, built once for the whole run if its sources changed (as `npm start` does), before
 * any spec starts a server that serves it: spec files running side by side never build it twice.
 */
function buildWebApp(): void {
  const root = path.resolve(__dirname, '../..');
  const r = spawnSync(process.execPath, ['scripts/web-build.mjs', '--quiet'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.status !== 0) throw new Error(`building the web app failed:\n${r.stdout}${r.stderr}`);
}

export interface TestPostgres {
  root: string;
  stop(): Promise<void>;
}
