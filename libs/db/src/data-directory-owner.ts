import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedPostgresError } from './embedded-postgres-error';
import { commandLine, parentPid, processAlive, waitForExit } from './process-info';

/**
 * Who runs the PostgreSQL on a data directory. PostgreSQL records its postmaster's pid in
 * `postmaster.pid`; the Creditlab process that started it records itself beside it in
 * `creditlab.pid`. A server killed outright (kill -9) leaves its PostgreSQL running: the next
 * start finds it by these two files and tells an orphan from one a live server still uses.
 */
const OWNER_FILE = 'creditlab.pid';

interface OwnerRecord {
  /** The Creditlab process (a server, or a test run) that started the postmaster. */
  server: number;
  postmaster: number;
}

/** The pid in `postmaster.pid`, if that process is alive and is a PostgreSQL. */
export async function runningPostmaster(dataDir: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number((await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  const command = await commandLine(pid);
  // A pid reused by another program (after a reboot, in a container): the file is stale, and
  // PostgreSQL would refuse to start over it while that program lives.
  if (command !== undefined && !/postgres/.test(command)) {
    await rm(path.join(dataDir, 'postmaster.pid'), { force: true });
    return undefined;
  }
  return pid;
}

async function readOwner(dataDir: string): Promise<OwnerRecord | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dataDir, OWNER_FILE), 'utf8')) as OwnerRecord;
  } catch {
    return undefined;
  }
}

/** Records this process as the one that runs `postmaster` on `dataDir`. */
export async function recordOwner(dataDir: string, postmaster: number): Promise<void> {
  const record: OwnerRecord = { server: process.pid, postmaster };
  await writeFile(path.join(dataDir, OWNER_FILE), JSON.stringify(record) + '\n');
}

/** Removes this process's record (after it stopped its PostgreSQL). */
export async function forgetOwner(dataDir: string): Promise<void> {
  if ((await readOwner(dataDir))?.server === process.pid)
    await rm(path.join(dataDir, OWNER_FILE), { force: true });
}

/** Stops a PostgreSQL this process did not start: fast shutdown, then harder if it lingers. */
export async function stopForeignPostmaster(pid: number): Promise<void> {
  for (const [signal, ms] of [
    ['SIGINT', 30_000],
    ['SIGQUIT', 10_000],
    ['SIGKILL', 10_000],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return; // gone
    }
    if (await waitForExit(pid, ms)) return;
  }
  throw new Error(`PostgreSQL (pid ${pid}) did not stop, even after SIGKILL`);
}

/**
 * Makes sure no PostgreSQL runs on `dataDir` before this process starts one: an orphan (its
 * Creditlab process is gone) is stopped, and `notice` says so; one that a live Creditlab process
 * runs, or that no Creditlab process started, is left alone and start-up stops with why.
 */
export async function claimDataDirectory(
  dataDir: string,
  notice: (message: string) => void,
): Promise<void> {
  const postmaster = await runningPostmaster(dataDir);
  if (postmaster === undefined) return;
  const owner = await readOwner(dataDir);
  const what = `starting PostgreSQL on the data directory ${dataDir}`;
  if (owner?.postmaster !== postmaster) {
    const parent = await parentPid(postmaster);
    throw new EmbeddedPostgresError(
      what,
      `a PostgreSQL is already running on it (pid ${postmaster}${parent ? `, started by process ${parent}` : ''}) that no Creditlab server recorded in ${OWNER_FILE} (an older Creditlab, or started by hand)`,
      `Stop it (kill -INT ${postmaster}), or give this server another CREDITLAB_PG_DIR and CREDITLAB_PG_PORT.`,
    );
  }
  // The recorded server must be alive and still the postmaster's parent: a pid reused since by
  // some other program is not its owner (where the parent cannot be read, a live pid is trusted).
  const parent = await parentPid(postmaster);
  if (processAlive(owner.server) && (parent === undefined || parent === owner.server)) {
    throw new EmbeddedPostgresError(
      what,
      `another Creditlab server (pid ${owner.server}) is running it (PostgreSQL pid ${postmaster})`,
      `Stop that server first (kill ${owner.server}), or give this one another CREDITLAB_PG_DIR and CREDITLAB_PG_PORT.`,
    );
  }
  await stopForeignPostmaster(postmaster);
  notice(
    `stopped PostgreSQL (pid ${postmaster}) left running on ${dataDir} by Creditlab process ${owner.server}, which is gone; starting it afresh`,
  );
}
