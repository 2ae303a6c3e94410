import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { track } from './process-registry';
import { idOf } from './system-postgres';

export interface PgBouncerOptions {
  /** `session` (the run's own, which the server needs) or `transaction` (a spec's, to show what breaks). */
  poolMode?: 'session' | 'transaction';
  /**
   * How long an idle server connection stays open. The run's closes them after 2 s: each spec file
   * has databases of its own, and their idle server connections would otherwise pile up past
   * PostgreSQL's max_connections. PgBouncer's own default is 600.
   */
  serverIdleTimeoutSeconds?: number;
}

/**
 * A PgBouncer in front of the run's PostgreSQL: in session mode for the whole run
 * (CREDITLAB_TEST_PGBOUNCER: the binary; `npm run test:pgbouncer`), so that the specs it selects
 * reach their databases through it, as a lab's server does that shares one PostgreSQL among several
 * processes through a pooler (docs/scaling.md); or one of a spec's own. Every database name is
 * passed through (`*`), since each spec file creates its own. As root it runs as the `postgres`
 * user: PgBouncer, like PostgreSQL, refuses to run as root.
 */
export async function startPgBouncer(
  binary: string,
  upstreamUrl: string,
  port: number,
  options: PgBouncerOptions = {},
): Promise<{ url: string; root: string; stop(): Promise<void> }> {
  if (!existsSync(binary))
    throw new Error(
      `no PgBouncer at ${binary}: install it first (Debian: apt-get install -y pgbouncer)`,
    );
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username);
  const password = decodeURIComponent(upstream.password);
  // The embedded PostgreSQL's URL names its socket folder (?host=…): PgBouncer reaches it there.
  const host = upstream.searchParams.get('host') ?? upstream.hostname;
  // Its own folder (0700, as mkdtemp makes it), handed to PgBouncer's user: the password file in it.
  const root = mkdtempSync(path.join(tmpdir(), 'creditlab-test-pgbouncer-'));
  const quoted = (s: string) => `"${s.replace(/"/g, '""')}"`;
  const files = {
    ini: path.join(root, 'pgbouncer.ini'),
    users: path.join(root, 'users.txt'),
    log: path.join(root, 'pgbouncer.log'),
  };
  writeFileSync(files.users, `${quoted(user)} ${quoted(password)}\n`, { mode: 0o600 });
  writeFileSync(
    files.ini,
    [
      '[databases]',
      `* = host=${host} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = plain',
      `auth_file = ${files.users}`,
      `pool_mode = ${options.poolMode ?? 'session'}`,
      // Spec files run two at a time, each with servers of about 20 connections and clients of its own.
      'max_client_conn = 1000',
      'default_pool_size = 200',
      `server_idle_timeout = ${options.serverIdleTimeoutSeconds ?? 2}`,
      `logfile = ${files.log}`,
      '',
    ].join('\n'),
  );
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? idOf('postgres') : undefined;
  if (owner)
    for (const f of [root, ...Object.values(files)])
      if (existsSync(f)) chownSync(f, owner.uid, owner.gid);
  const bouncer = spawn(binary, [files.ini], {
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(owner ?? {}),
  });
  if (bouncer.pid !== undefined) track(bouncer.pid, `PgBouncer on port ${port}`, false, 'run');
  let said = ''; // the last of what it wrote to stderr (it logs to its file), for a failed start
  bouncer.stderr.on('data', (c: Buffer) => (said = (said + c.toString()).slice(-4000)));
  const failed = new Promise<never>((_, reject) => {
    bouncer.once('error', (e) => reject(new Error(`PgBouncer could not be started: ${e.message}`)));
    bouncer.once('exit', (code) =>
      reject(new Error(`PgBouncer exited with ${code} (its log: ${files.log}):\n${said}`)),
    );
  });
  failed.catch(() => undefined); // once it has started, its exit is stop()'s business
  const stop = () => stopProcess(bouncer);
  try {
    await Promise.race([failed, accepting(port, 60_000)]);
  } catch (e) {
    await stop();
    throw e;
  }
  const url = new URL(upstreamUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  url.search = '';
  return {
    url: url.toString(),
    root,
    stop,
  };
}

/**
 * Stops it: SIGINT, which PgBouncer 1.18 takes as a safe shutdown that waits for its clients to
 * leave, then SIGKILL if some client still holds on after a few seconds (nothing of it is kept).
 */
function stopProcess(bouncer: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (bouncer.exitCode !== null || bouncer.signalCode !== null || bouncer.pid === undefined)
      return resolve();
    const hard = setTimeout(() => bouncer.kill('SIGKILL'), 5_000);
    bouncer.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    bouncer.kill('SIGINT');
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port` (PgBouncer logs to its file). */
async function accepting(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const up = await new Promise<boolean>((resolve) =>
      connect(port, '127.0.0.1')
        .once('connect', function (this: Socket) {
          this.destroy();
          resolve(true);
        })
        .once('error', () => resolve(false)),
    );
    if (up) return;
    if (Date.now() > deadline) throw new Error(`PgBouncer took no connection on port ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
