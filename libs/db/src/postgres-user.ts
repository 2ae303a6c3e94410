import { execFile } from 'node:child_process';
import { OWN_POSTGRES, step } from './embedded-postgres-error';

/** The account PostgreSQL runs as when the server runs as root (PostgreSQL refuses to run as root). */
export const POSTGRES_USER = 'postgres';

export interface UserIds {
  uid: number;
  gid: number;
}

export const runningAsRoot = (): boolean => process.getuid?.() === 0;

const run = (file: string, args: string[]): Promise<string> =>
  new Promise((resolve, reject) =>
    execFile(file, args, { timeout: 30_000 }, (err, stdout, stderr) =>
      err
        ? reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || err.message}`))
        : resolve(stdout),
    ),
  );

async function lookup(): Promise<UserIds | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      run('id', ['-u', POSTGRES_USER]),
      run('id', ['-g', POSTGRES_USER]),
    ]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  } catch {
    return undefined;
  }
}

/**
 * The `postgres` system account's ids, creating the account (a system user with its own group,
 * no home, no login shell) if the system has none. Only for root.
 */
export function postgresUser(): Promise<UserIds> {
  return step(
    `finding or creating the system user "${POSTGRES_USER}" that PostgreSQL runs as (it refuses to run as root)`,
    `Create it yourself (useradd --system --user-group ${POSTGRES_USER}), or run the server as a user other than root. ${OWN_POSTGRES}`,
    async () => {
      const found = await lookup();
      if (found) return found;
      await run('useradd', [
        '--system',
        '--user-group',
        '--no-create-home',
        '--shell',
        '/usr/sbin/nologin',
        POSTGRES_USER,
      ]);
      const created = await lookup();
      if (!created) throw new Error(`useradd reported success but "id ${POSTGRES_USER}" fails`);
      return created;
    },
  );
}
