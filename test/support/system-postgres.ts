import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { track } from './process-registry';

/**
 * A PostgreSQL from an installed distribution (Debian's postgresql-15: bin at
 * /usr/lib/postgresql/15/bin), in a fresh data directory on a given port, for running the suite
 * against another version than the embedded one (CREDITLAB_TEST_POSTGRES_BIN). As root it runs as
 * the `postgres` user, which PostgreSQL requires. It is reached over TLS (a self-signed certificate
 * made here, not verified: `sslmode=no-verify`), as a managed PostgreSQL is, so that the suite's
 * other database is also its TLS transport (the embedded one is reached through a Unix socket).
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
  const tls = selfSignedCertificate(path.join(root, 'tls'), user);
  const server = spawn(
    path.join(bin, 'postgres'),
    [
      ...['-D', dataDir, '-p', String(port), '-h', '127.0.0.1', '-k', socketDir],
      ...['-c', 'ssl=on', '-c', `ssl_cert_file=${tls.cert}`, '-c', `ssl_key_file=${tls.key}`],
    ],
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
  const url = `postgres://postgres:creditlab@127.0.0.1:${port}/postgres?sslmode=no-verify`;
  const stop = () =>
    new Promise<void>((resolve) => {
      if (server.exitCode !== null) return resolve();
      server.once('exit', () => resolve());
      server.kill('SIGINT'); // fast shutdown
    });
  try {
    await expectTls(url);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, root, stop };
}

/** The ids of system user `name` (PostgreSQL and PgBouncer run as `postgres` when the tests run as root). */
export function idOf(name: string): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0)
    throw new Error(`no user ${name}: PostgreSQL and PgBouncer cannot run as root`);
  return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
}

/** A certificate and key for 127.0.0.1 in `dir`, readable by the server's user only. */
function selfSignedCertificate(
  dir: string,
  user: { uid: number; gid: number } | undefined,
): { cert: string; key: string } {
  mkdirSync(dir);
  const cert = path.join(dir, 'server.crt');
  const key = path.join(dir, 'server.key');
  const made = spawnSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2'],
      ...['-subj', '/CN=127.0.0.1', '-keyout', key, '-out', cert],
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (made.status !== 0)
    throw new Error(
      `openssl could not make the test certificate (Debian: apt-get install -y openssl): ${made.error?.message ?? made.stderr}`,
    );
  chmodSync(key, 0o600); // PostgreSQL refuses a key others can read
  if (user) for (const f of [dir, cert, key]) chownSync(f, user.uid, user.gid);
  return { cert, key };
}

/** Fails unless a connection to `url` is encrypted (pg_stat_ssl of its own backend). */
async function expectTls(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a lost connection fails the query below instead
  await client.connect();
  try {
    const res = await client.query<{ ssl: boolean }>(
      'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    if (res.rows[0]?.ssl !== true)
      throw new Error(`the test PostgreSQL at ${url} is not reached over TLS`);
  } finally {
    await client.end();
  }
}
