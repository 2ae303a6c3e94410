import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describeStatus, exitOf, OutputTail } from './child-process-output';
import type { PostgresBinaries } from './postgres-binaries';
import type { UserIds } from './postgres-user';

export interface ClusterOptions {
  binaries: PostgresBinaries;
  dataDir: string;
  /** Set when running as root: PostgreSQL's processes run as this user. */
  user?: UserIds;
  /** PostgreSQL's own output, line by line. */
  onLog?: (line: string) => void;
}

/** English, whatever the machine's locale: start-up waits for one of PostgreSQL's messages. */
export const POSTGRES_ENV = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C', LANG: 'C' };

/** Creates a cluster in `dataDir` (initdb), with superuser `superuser` and its password. */
export async function initialiseCluster(
  options: ClusterOptions,
  superuser: string,
  password: string,
): Promise<void> {
  // initdb reads the password from a file, which PostgreSQL's user must be able to read.
  const dir = await mkdtemp(path.join(tmpdir(), 'creditlab-initdb-'));
  const pwfile = path.join(dir, randomBytes(4).toString('hex'));
  try {
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (options.user) {
      await chown(dir, options.user.uid, options.user.gid);
      await chown(pwfile, options.user.uid, options.user.gid);
    }
    const child = spawn(
      options.binaries.initdb,
      [
        `--pgdata=${options.dataDir}`,
        `--username=${superuser}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        '--no-instructions',
      ],
      { ...options.user, env: POSTGRES_ENV, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 },
    );
    const tail = new OutputTail(child, options.onLog);
    const { code, signal } = await exitOf(child);
    if (code !== 0)
      throw new Error(
        `initdb ${describeStatus(code, signal)}: ${tail.last().slice(-3).join(' | ')}`,
      );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
