import path from 'node:path';
import pg from 'pg';
import { claimDataDirectory, forgetOwner, recordOwner } from './data-directory-owner';
import { hasCluster, prepareDataDir } from './data-directory';
import { OWN_POSTGRES, step } from './embedded-postgres-error';
import { explainStartFailure } from './explain-start-failure';
import { installBinaries, packagedBinaries, type PostgresBinaries } from './postgres-binaries';
import { postgresUser, runningAsRoot } from './postgres-user';
import { describeExit } from './child-process-output';
import { initialiseCluster } from './initdb';
import { Postmaster } from './postmaster';
import { PostmasterSupervisor, type SupervisorEvents } from './postmaster-supervisor';

export { defaultDataDir, defaultDataDirs, chooseDataDir } from './data-directory';
export { EmbeddedPostgresError } from './embedded-postgres-error';

export interface EmbeddedPostgresNotice {
  level: 'log' | 'warn';
  message: string;
}

export interface EmbeddedPostgresOptions {
  /** Data directory; kept between starts (the database is persistent). */
  dataDir: string;
  port: number;
  /** Where PostgreSQL's own log lines go (default: dropped). */
  onLog?: (line: string) => void;
  /** What the launcher did or saw (binaries installed, an orphan stopped, a crash and restart). */
  onNotice?: (notice: EmbeddedPostgresNotice) => void;
  /** As root: where PostgreSQL's binaries are copied to (default /var/lib/creditlab/postgresql). */
  installRoot?: string;
  /** Server settings for this start (`-c name=value`), e.g. the benchmarks' pg_stat_statements. */
  settings?: Readonly<Record<string, string>>;
}

export interface RunningPostgres {
  /** Connection string of the `postgres` maintenance database. */
  url: string;
  /** The postmaster's pid, unless it is being restarted. */
  pid(): number | undefined;
  /** Stops supervising and stops PostgreSQL. */
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'creditlab';

/** The binaries to run: in place, or as root a copy that PostgreSQL's own user can reach. */
async function usableBinaries(
  asRoot: boolean,
  installRoot: string | undefined,
  notice: (n: EmbeddedPostgresNotice) => void,
): Promise<PostgresBinaries> {
  const packaged = await packagedBinaries();
  if (!asRoot) return packaged;
  const { binaries, copied } = await installBinaries(packaged, installRoot);
  if (copied) notice({ level: 'log', message: `copied PostgreSQL's binaries to ${binaries.dir}` });
  return binaries;
}

/** What the supervisor reports, as notices for the owner's log. */
function supervisorNotices(
  notice: (n: EmbeddedPostgresNotice) => void,
  dataDir: string,
  port: number,
): SupervisorEvents {
  return {
    crashed: (pid, exit, lines) =>
      notice({
        level: 'warn',
        message: `embedded PostgreSQL (pid ${pid}) exited unexpectedly (it ${describeExit(exit)}); restarting it. Its last lines: ${lines.slice(-3).join(' | ') || 'none'}`,
      }),
    restarted: (pid) =>
      notice({ level: 'log', message: `embedded PostgreSQL restarted (pid ${pid})` }),
    restartFailed: (error, retryInMs) =>
      notice({
        level: 'warn',
        message: `could not restart the embedded PostgreSQL: ${explainStartFailure(error, dataDir, port).reason}; trying again in ${retryInMs / 1000} s`,
      }),
  };
}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package's binaries, initialising the data
 * directory on first use, and keeps it running (restarting it if it dies) until `stop()`.
 * Running as root, PostgreSQL runs as a `postgres` system user (created if missing). A failure
 * rejects with an EmbeddedPostgresError: which step failed, why, and what to do.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<RunningPostgres> {
  const notice = (n: EmbeddedPostgresNotice) => options.onNotice?.(n);
  const dataDir = path.resolve(options.dataDir);
  const { port } = options;
  const user = runningAsRoot() ? await postgresUser() : undefined;
  const binaries = await usableBinaries(user !== undefined, options.installRoot, notice);
  await prepareDataDir(dataDir, user);
  await step(
    `checking for a PostgreSQL already running on ${dataDir}`,
    `Stop the PostgreSQL processes of that directory (ps -ef | grep postgres) and start again. ${OWN_POSTGRES}`,
    () => claimDataDirectory(dataDir, (message) => notice({ level: 'warn', message })),
  );
  const cluster = { binaries, dataDir, user, onLog: options.onLog };
  const socketDir = socketDirectoryFor(dataDir, port);
  if (!hasCluster(dataDir))
    await step(
      `initialising the data directory ${dataDir} (initdb)`,
      `Make sure the directory is empty and its disk has room, or choose another CREDITLAB_PG_DIR. ${OWN_POSTGRES}`,
      () => initialiseCluster(cluster, USER, PASSWORD),
    );
  const launch = async () => {
    const postmaster = await Postmaster.start({
      ...cluster,
      port,
      socketDir,
      settings: options.settings,
    });
    await recordOwner(dataDir, postmaster.pid).catch(async (e: unknown) => {
      await postmaster.stop();
      throw e;
    });
    return postmaster;
  };
  const first = await launch().catch((e: unknown) => {
    throw explainStartFailure(e, dataDir, port);
  });
  const supervisor = new PostmasterSupervisor(
    first,
    launch,
    supervisorNotices(notice, dataDir, port),
  );
  return {
    url: `postgres://${USER}:${PASSWORD}@localhost:${port}/postgres${socketDir ? `?host=${encodeURIComponent(socketDir)}` : ''}`,
    pid: () => supervisor.pid(),
    stop: async () => {
      await supervisor.stop();
      await forgetOwner(dataDir).catch(() => undefined);
    },
  };
}

/** The longest socket path the kernel takes (sun_path is 108 bytes with its terminating NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * The embedded server is reached through a Unix socket in its data directory when the path fits:
 * a local socket skips the TCP stack, which on loopback costs both processes CPU for every byte
 * ingest sends (docs/benchmarks.md). A data directory too deep for a socket path falls back to TCP.
 */
export function socketDirectoryFor(dataDir: string, port: number): string | undefined {
  return `${dataDir}/.s.PGSQL.${port}`.length <= MAX_SOCKET_PATH ? dataDir : undefined;
}

/** Creates database `name` on the server at `adminUrl` unless it exists; returns its URL. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`invalid database name ${JSON.stringify(name)}`);
  const client = new pg.Client({ connectionString: adminUrl });
  // A connection lost mid-way fails the query it was running; unheard, the event would end the process.
  client.on('error', () => undefined);
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
