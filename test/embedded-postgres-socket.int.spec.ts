import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../libs/db/src/embedded-postgres';
import { freePort } from './support/free-port';
import { privateDirectory, removePrivateDirectories } from './support/private-postgres';

/**
 * The embedded PostgreSQL is reached through a Unix socket in its data directory (no TCP stack on
 * the ingest path), and over TCP when the data directory is too deep for a socket's path.
 */

afterAll(removePrivateDirectories);

/** How the connection at `url` reached the server: a Unix socket has no server address. */
async function transportOf(url: string): Promise<'unix socket' | 'tcp'> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ addr: string | null }>(
      'SELECT inet_server_addr()::text AS addr',
    );
    return rows[0]?.addr === null ? 'unix socket' : 'tcp';
  } finally {
    await client.end();
  }
}

async function startIn(dataDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  return startEmbeddedPostgres({ dataDir, port: await freePort() });
}

test('a data directory with a short path gets a socket, and the server URL uses it', async () => {
  const dataDir = path.join(await privateDirectory(0o755), 'pg');
  const db = await startIn(dataDir);
  try {
    expect(new URL(db.url).searchParams.get('host')).toBe(dataDir);
    expect(await transportOf(db.url)).toBe('unix socket');
  } finally {
    await db.stop();
  }
});

test('a data directory too deep for a socket path is reached over TCP', async () => {
  const root = await privateDirectory(0o755);
  const deep = path.join(root, ...Array.from({ length: 8 }, () => 'a-rather-long-folder'));
  await mkdir(deep, { recursive: true, mode: 0o755 });
  const dataDir = path.join(deep, 'pg');
  expect(dataDir.length).toBeGreaterThan(108);
  const db = await startIn(dataDir);
  try {
    expect(new URL(db.url).searchParams.get('host')).toBeNull();
    expect(await transportOf(db.url)).toBe('tcp');
  } finally {
    await db.stop();
  }
});

test('settings given at start reach the server (the benchmarks preload pg_stat_statements so)', async () => {
  const dataDir = path.join(await privateDirectory(0o755), 'pg');
  const db = await startEmbeddedPostgres({
    dataDir,
    port: await freePort(),
    settings: { shared_preload_libraries: 'pg_stat_statements', work_mem: '7MB' },
  });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    expect((await client.query('SHOW work_mem')).rows[0].work_mem).toBe('7MB');
    await client.query('CREATE EXTENSION pg_stat_statements');
    const { rows } = await client.query<{ calls: string }>(
      "SELECT calls::text FROM pg_stat_statements WHERE query = 'SHOW work_mem'",
    );
    expect(rows).toEqual([{ calls: '1' }]);
  } finally {
    await client.end();
    await db.stop();
  }
});
