import { processAlive } from '../../libs/db/src/process-info';
import { track } from './process-registry';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free-port';
import { spawnServer } from './test-server';

const made: string[] = [];

/**
 * Removes the directories this spec file made (privateDirectory) (a cluster is some 40 MB): call it in `afterAll`,
 * once the servers and their PostgreSQL are stopped.
 */
export async function removePrivateDirectories(): Promise<void> {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
}

/** A fresh directory with `mode` under the temp dir, removed by removePrivateDirectories. */
export async function privateDirectory(mode: number): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-private-'));
  made.push(dir);
  await chmod(dir, mode);
  return dir;
}

/**
 * A data directory and port of its own for a server that starts the embedded PostgreSQL (no
 * DATABASE_URL), so that a test never touches the default one (and tests do not collide).
 */
export async function privateEmbeddedPostgres(): Promise<{
  dataDir: string;
  port: number;
  env: { CREDITLAB_PG_DIR: string; CREDITLAB_PG_PORT: string };
}> {
  const root = await privateDirectory(0o755); // PostgreSQL runs as its own user (tests as root)
  const dataDir = path.join(root, 'pg');
  const port = await freePort();
  return { dataDir, port, env: { CREDITLAB_PG_DIR: dataDir, CREDITLAB_PG_PORT: String(port) } };
}

/** The pid PostgreSQL recorded in its data directory (the postmaster), if the file is there. */
export async function postmasterPid(dataDir: string): Promise<number | undefined> {
  try {
    const pid = Number(
      (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0],
    );
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Records the PostgreSQL now running on `dataDir` with the test's processes: it runs in a process
 * group of its own (a server's Ctrl-C must not reach it), so stopping a server's group would miss it.
 */
export async function trackPostmaster(dataDir: string): Promise<number> {
  const pid = await waitFor(() => postmasterPid(dataDir));
  track(pid, `embedded PostgreSQL in ${dataDir}`);
  return pid;
}

/** Whether a process exists (the same test the server uses on pid files). */
export const alive = processAlive;

export const portOpen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

/**
 * Polls `probe` every 100 ms until it returns something other than undefined or false. No time
 * limit of its own: the test's (jest.config.js) applies.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Runs the server for a start-up that must fail, and resolves with its exit code and everything it
 * printed (from spawnServer's rejection). A server that starts after all is stopped, exit code 0.
 */
export async function runServerToExit(
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; output: string }> {
  try {
    const server = await spawnServer(env);
    await server.stop();
    return { code: 0, output: server.output() };
  } catch (e) {
    const failed = /^server exited with (\S+) before listening:\n([\s\S]*)$/.exec(
      (e as Error).message,
    );
    if (!failed) throw e;
    return { code: failed[1] === 'null' ? null : Number(failed[1]), output: failed[2] as string };
  }
}
