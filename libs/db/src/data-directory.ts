import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, rename, stat } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { runningPostmaster } from './data-directory-owner';
import { makeDirectory, unreachableAncestor } from './directories';
import { EmbeddedPostgresError, OWN_POSTGRES, step } from './embedded-postgres-error';
import { POSTGRES_USER, runningAsRoot, type UserIds } from './postgres-user';

/** Where the embedded database lives by default, and where older versions kept it. */
export interface DataDirLocations {
  current: string;
  /** The previous default, whose database is moved to `current` (root only: under the temp dir). */
  legacy?: string;
}

/**
 * The default data directory: durable, and enterable by PostgreSQL's own user. As root that is
 * `/var/lib/creditlab/pg` (root's home is closed to the `postgres` user PostgreSQL runs as);
 * otherwise `~/.creditlab/pg`. Until this version root's default was `$TMPDIR/creditlab/pg`,
 * shared by every checkout and lost whenever the temp dir was cleaned.
 */
export function defaultDataDirs(): DataDirLocations {
  return runningAsRoot()
    ? { current: '/var/lib/creditlab/pg', legacy: path.join(tmpdir(), 'creditlab', 'pg') }
    : { current: path.join(homedir(), '.creditlab', 'pg') };
}

export const defaultDataDir = (): string => defaultDataDirs().current;

/** Whether `dir` holds an initialised PostgreSQL cluster. */
export const hasCluster = (dir: string) => existsSync(path.join(dir, 'PG_VERSION'));

/**
 * The data directory to use: the configured one, else the default. A database in the old default
 * is moved to the new one when that is safe — the new one does not exist yet, no PostgreSQL runs
 * on the old one, and both are on one file system, so a rename moves it whole or not at all.
 * Otherwise it is used where it is, and the notes say how to move it.
 */
export async function chooseDataDir(
  configured: string | undefined,
  defaults: DataDirLocations = defaultDataDirs(),
): Promise<{ dir: string; notes: string[] }> {
  if (configured) return { dir: path.resolve(configured), notes: [] };
  const { current, legacy } = defaults;
  if (!legacy || !hasCluster(legacy)) return { dir: current, notes: [] };
  if (existsSync(current))
    return {
      dir: current,
      notes: [
        `an older embedded database is still in ${legacy} (the default before ${current}); it is not used. Start with CREDITLAB_PG_DIR=${legacy} to reach it, or delete it`,
      ],
    };
  const howToMove = `stop the server, then move it (mv ${legacy} ${current}; across file systems: cp -a ${legacy} ${current} && rm -r ${legacy}) and start again`;
  const running = await runningPostmaster(legacy);
  if (running !== undefined)
    return {
      dir: legacy,
      notes: [
        `using the embedded database in ${legacy}, the old default in the temp directory, because a PostgreSQL (pid ${running}) runs on it; to keep it in ${current}, ${howToMove}`,
      ],
    };
  try {
    await makeDirectory(path.dirname(current), 0o755);
    await rename(legacy, current);
    return {
      dir: current,
      notes: [
        `moved the embedded database from ${legacy} (the old default, in the temp directory, which the system may clean) to ${current}`,
      ],
    };
  } catch (e) {
    return {
      dir: legacy,
      notes: [
        `using the embedded database in ${legacy}, the old default in the temp directory, which the system may clean: it could not be moved to ${current} (${(e as Error).message}); ${howToMove}`,
      ],
    };
  }
}

/**
 * Creates the data directory if needed (mode 700; as root, owned by user `postgres`) and checks
 * that PostgreSQL's user can reach it.
 */
export function prepareDataDir(dataDir: string, user: UserIds | undefined): Promise<void> {
  const remedy = `Choose another CREDITLAB_PG_DIR (unset, it is ${defaultDataDir()}). ${OWN_POSTGRES}`;
  return step(`preparing the data directory ${dataDir}`, remedy, async () => {
    await makeDirectory(path.dirname(dataDir), 0o755);
    const blocked = user && (await unreachableAncestor(dataDir, user));
    if (blocked)
      throw new EmbeddedPostgresError(
        `preparing the data directory ${dataDir}`,
        `PostgreSQL runs as user "${POSTGRES_USER}" (it refuses to run as root), which cannot enter ${blocked.dir} (mode ${blocked.mode}, owner uid ${blocked.owner})`,
        `Choose a CREDITLAB_PG_DIR outside it (unset, it is ${defaultDataDir()}), or let others enter it (chmod o+x ${blocked.dir}). ${OWN_POSTGRES}`,
      );
    if (!existsSync(dataDir)) await mkdir(dataDir, { mode: 0o700 });
    if (!(await stat(dataDir)).isDirectory()) throw new Error('it is not a directory');
    // A fresh (empty) directory is made PostgreSQL's (it refuses one that others may enter, and as
    // root it is handed to PostgreSQL's user); an existing cluster is already its.
    if ((await readdir(dataDir)).length === 0) {
      await chmod(dataDir, 0o700);
      if (user) await chown(dataDir, user.uid, user.gid);
    }
  });
}
