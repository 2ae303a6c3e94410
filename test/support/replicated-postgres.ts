import { spawnSync } from 'node:child_process';
import { appendFile, chown, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabase, startEmbeddedPostgres } from '../../libs/db/src/embedded-postgres';
import { freePort } from './free-port';
import { privateDirectory, trackPostmaster, waitFor } from './private-postgres';

export interface ReplicatedPostgres {
  /** The database `name` on the primary, and the same database on the hot standby. */
  primaryUrl: string;
  replicaUrl: string;
  /** The primary's data directory (its processes' CPU is read from there: bench:replica). */
  primaryDataDir: string;
  /** Stops the standby alone (the primary goes on). */
  stopStandby(): Promise<void>;
  /** Stops the standby, then the primary. */
  stop(): Promise<void>;
}

/**
 * A primary and a hot standby streaming from it, both from the embedded binaries (which have no
 * pg_basebackup): the primary is made and given database `name`, stopped cleanly, and its data
 * directory copied as the standby's (a cold base backup), which then starts in recovery with
 * `primary_conninfo` naming the primary. Resolves once the standby streams. Remove the
 * directories with removePrivateDirectories after `stop`.
 */
export async function startReplicatedPostgres(
  name: string,
  /** The standby's own settings (postgresql.auto.conf), e.g. how long replay waits for its queries. */
  standbySettings: Record<string, string> = {},
): Promise<ReplicatedPostgres> {
  const root = await privateDirectory(0o755); // PostgreSQL runs as its own user (tests as root)
  const primaryDir = path.join(root, 'primary');
  const standbyDir = path.join(root, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];

  const first = await startEmbeddedPostgres({ dataDir: primaryDir, port: primaryPort });
  await trackPostmaster(primaryDir);
  await ensureDatabase(first.url, name);
  await first.stop();

  const copied = spawnSync('cp', ['-a', primaryDir, standbyDir], { encoding: 'utf8' });
  if (copied.status !== 0) throw new Error(`copying the primary's data failed: ${copied.stderr}`);
  await rm(path.join(standbyDir, 'postmaster.pid'), { force: true });
  const owner = await stat(standbyDir);
  const signal = path.join(standbyDir, 'standby.signal');
  await writeFile(signal, '');
  await chown(signal, owner.uid, owner.gid);
  // The primary's pg_hba.conf (initdb's) lets its superuser replicate over 127.0.0.1.
  await appendFile(
    path.join(standbyDir, 'postgresql.auto.conf'),
    [
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres password=creditlab application_name=creditlab-test-standby'`,
      ...Object.entries(standbySettings).map(([k, v]) => `${k} = '${v}'`),
    ].join('\n') + '\n',
  );

  const primary = await startEmbeddedPostgres({ dataDir: primaryDir, port: primaryPort });
  await trackPostmaster(primaryDir);
  let standby: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  try {
    standby = await startEmbeddedPostgres({ dataDir: standbyDir, port: standbyPort });
    await trackPostmaster(standbyDir);
    await waitFor(() => streaming(primary.url));
  } catch (e) {
    await standby?.stop();
    await primary.stop();
    throw e;
  }
  const running = standby;
  const replicaUrl = new URL(running.url);
  replicaUrl.pathname = `/${name}`;
  return {
    primaryUrl: await ensureDatabase(primary.url, name),
    replicaUrl: replicaUrl.toString(),
    primaryDataDir: primaryDir,
    stopStandby: () => running.stop(),
    stop: async () => {
      await running.stop();
      await primary.stop();
    },
  };
}

/** Whether a standby streams from the primary at `url`. */
async function streaming(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const res = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming'`,
    );
    return (res.rows[0]?.n ?? 0) > 0;
  } finally {
    await client.end();
  }
}
