import { ensureDatabase, startEmbeddedPostgres } from '@creditlab/db';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../test/support/free-port';
import { ADMIN_KEY, spawnServer, type ServerProcess } from '../../test/support/test-server';

export interface BenchDatabase {
  databaseUrl: string;
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

/** A fresh embedded PostgreSQL in a scratch folder, for one benchmark run. */
export async function startBenchDatabase(): Promise<BenchDatabase> {
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-bench-'));
  await chmod(dir, 0o755); // PostgreSQL runs as its own user and must reach pg/ inside
  const pgServer = await startEmbeddedPostgres({
    dataDir: path.join(dir, 'pg'),
    port: await freePort(),
  });
  const databaseUrl = await ensureDatabase(pgServer.url, 'bench');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  return {
    databaseUrl,
    pool,
    dir,
    close: async () => {
      await pool.end();
      await pgServer.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh embedded PostgreSQL and a server process on it, for one benchmark run. */
export async function startBenchServer(
  env: Record<string, string | undefined>,
): Promise<BenchServer> {
  const db = await startBenchDatabase();
  // BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the server under load.
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const server = await spawnServer({ DATABASE_URL: db.databaseUrl, LOG_LEVEL: 'warn', ...env }, [
    process.execPath,
    ...nodeArgs,
    '-r',
    '@swc-node/register',
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
