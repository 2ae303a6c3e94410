import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { track } from './process-registry';

/**
 * A PostgreSQL from an installed distribution (Debian's postgresql-15: bin at
 * /usr/lib/postgresql/15/bin), in a fresh data directory on a given port, for running the suite
 * against another version than the embedded one (CREDITLAB_TEST_POSTGRES_BIN). As root it runs as
 * the `postgres` user, which PostgreSQL requires.
 */
export async function startSystemPostgres(
  bin: string,
  port: number,
): Promise<{ url: string; root: string; stop(): Promise<void> }> {
  for (const tool of ['initdb', 'postgres'])
    if (!existsSync(path.join(bin, tool)))
      throw new Error(
        `no ${tool} in ${bin}: install the server first (Debian: apt-get install -y postgresql-15)`,
      );
  const root = mkdtempSync(path.join(tmpdir(), 'creditlab-test-system-pg-'));
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  const socketDir = path.join(root, 'socket');
  mkdirSync(dataDir);
  mkdirSync(socketDir);
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? idOf('postgres') : undefined;
  if (user) for (const dir of [dataDir, socketDir]) chownSync(dir, user.uid, user.gid);
  const pwfile = path.join(root, 'pw');
  writeFileSync(pwfile, 'creditlab\n');
  if (user) chownSync(pwfile, user.uid, user.gid);
  const init = spawnSync(
    path.join(bin, 'initdb'),
    [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--pwfile',
      pwfile,
      '-A',
      'md5',
      '-E',
      'UTF8',
      '--no-instructions',
    ],
    { encoding: 'utf8', timeout: 120_000, ...(user ?? {}) },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const server = spawn(
    path.join(bin, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-h', '127.0.0.1', '-k', socketDir],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) },
  );
  track(server.pid as number, `PostgreSQL from ${bin} on port ${port}`, false, 'run');
  let log = '';
  server.stderr.on('data', (c: Buffer) => (log += c.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start:\n${log}`)), 60_000);
    const check = () => {
      if (/ready to accept connections/.test(log)) {
        clearTimeout(timer);
        resolve();
      }
    };
    server.stderr.on('data', check);
    server.once('exit', (code) => reject(new Error(`PostgreSQL exited with ${code}:\n${log}`)));
  });
  return {
    url: `postgres://postgres:creditlab@127.0.0.1:${port}/postgres`,
    root,
    stop: () =>
      new Promise<void>((resolve) => {
        if (server.exitCode !== null) return resolve();
        server.once('exit', () => resolve());
        server.kill('SIGINT'); // fast shutdown
      }),
  };
}

/** The ids of system user `name` (PostgreSQL and PgBouncer run as `postgres` when the tests run as root). */
export function idOf(name: string): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0)
    throw new Error(`no user ${name}: PostgreSQL and PgBouncer cannot run as root`);
  return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
}
