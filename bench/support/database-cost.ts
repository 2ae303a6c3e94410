import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

/** Where PostgreSQL's write-ahead log is: the bytes written between two readings are the database's write cost. */
export async function walPosition(db: pg.Pool | pg.PoolClient): Promise<string> {
  return (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn() AS lsn')).rows[0]!.lsn;
}

export async function walSince(db: pg.Pool | pg.PoolClient, from: string): Promise<number> {
  const res = await db.query<{ n: string }>(
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS n',
    [from],
  );
  return Number(res.rows[0]!.n);
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** CPU seconds so far of each PostgreSQL process (postmaster and every child: backends, WAL writer, …). */
export async function databaseCpu(dataDir: string | undefined): Promise<Map<number, number>> {
  if (dataDir === undefined) return new Map();
  const postmaster = Number(
    (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0],
  );
  const cpu = new Map([[postmaster, await cpuSeconds(postmaster)]]);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.split(') ')[1]?.split(' ')[1]);
    if (ppid === postmaster) cpu.set(Number(entry), await cpuSeconds(Number(entry)).catch(() => 0));
  }
  return cpu;
}

/**
 * PostgreSQL's CPU seconds since `before`: each process's growth (a process that ended meanwhile,
 * such as an autovacuum worker, is left out rather than counted negative).
 */
export async function databaseCpuSince(
  dataDir: string | undefined,
  before: Map<number, number>,
): Promise<number> {
  if (dataDir === undefined) return NaN; // a PostgreSQL elsewhere: its CPU is not ours to see
  let total = 0;
  for (const [pid, seconds] of await databaseCpu(dataDir))
    total += seconds - (before.get(pid) ?? 0);
  return total;
}
