import type pg from 'pg';

/**
 * How far behind a read replica may be before /readyz says so: one WAL segment. Less is the normal
 * distance of a replica under ingest (it replays what the primary wrote a moment ago).
 */
export const REPLICA_LAG_WARNING_BYTES = 16 * 1024 * 1024;

interface StandbyRow {
  recovering: boolean;
  replayed: string | null;
  paused: boolean | null;
  replayed_at: Date | null;
}

/**
 * What is wrong with the read replica now, if anything, in words for /readyz: unreachable, not a
 * standby, replay paused, or far behind the primary. A replica that is wrong does not stop the
 * process's work (ingest, jobs, mutations go to the primary), so this is a warning, not a failed
 * check; GraphQL queries fail while it is unreachable and show older data while it lags.
 */
export async function replicaWarning(
  primary: pg.Pool,
  replica: pg.Pool,
): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(unreachable(`no answer within ${ANSWER_WITHIN_MS / 1000} s`)),
      ANSWER_WITHIN_MS,
    );
  });
  return Promise.race([lookAt(primary, replica), late]).finally(() => clearTimeout(timer));
}

const unreachable = (why: string) =>
  `unreachable: ${why}; GraphQL queries fail until it answers (CREDITLAB_READ_REPLICA_URL)`;

/** /readyz answers within this, whatever the replica does (a host that is gone never answers). */
const ANSWER_WITHIN_MS = 5000;

async function lookAt(primary: pg.Pool, replica: pg.Pool): Promise<string | undefined> {
  let standby: StandbyRow;
  try {
    // Paused is asked only during recovery: PostgreSQL refuses the question otherwise.
    standby = (
      await replica.query<StandbyRow>(
        `SELECT pg_is_in_recovery() AS recovering, pg_last_wal_replay_lsn()::text AS replayed,
                CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() END AS paused,
                pg_last_xact_replay_timestamp() AS replayed_at`,
      )
    ).rows[0] as StandbyRow;
  } catch (e) {
    return unreachable((e as Error).message);
  }
  if (!standby.recovering)
    return 'not a standby (pg_is_in_recovery() is false): CREDITLAB_READ_REPLICA_URL should name a hot standby of the database the server writes to';
  const [ours, theirs] = await Promise.all([systemIdentifier(primary), systemIdentifier(replica)]);
  if (ours && theirs && ours !== theirs)
    return `a standby of another cluster (its system identifier is ${theirs}, the primary's ${ours}): CREDITLAB_READ_REPLICA_URL should name a hot standby of the database the server writes to`;
  if (standby.replayed === null) return 'has replayed nothing of the primary yet';
  // NaN if the primary does not answer this moment: /readyz's own check says so.
  const behind = await primary
    .query<{ bytes: string }>(
      'SELECT greatest(pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn), 0)::text AS bytes',
      [standby.replayed],
    )
    .then(
      (r) => Number(r.rows[0]?.bytes),
      () => Number.NaN,
    );
  const since = standby.replayed_at
    ? `; its last replayed commit is from ${standby.replayed_at.toISOString()}`
    : '';
  if (standby.paused) {
    const distance = Number.isNaN(behind) ? '' : `, ${behind} bytes of WAL behind the primary`;
    return `replay paused${distance}${since} (pg_wal_replay_resume() on the replica resumes it); GraphQL queries show data as of then`;
  }
  if (behind > REPLICA_LAG_WARNING_BYTES)
    return `${(behind / 1024 / 1024).toFixed(1)} MiB of WAL behind the primary${since}; GraphQL queries show older data until it catches up`;
  return undefined;
}

/**
 * The cluster's system identifier, which a standby shares with its primary; undefined where the
 * role may not read it (a managed PostgreSQL may not let it call pg_control_system).
 */
async function systemIdentifier(pool: pg.Pool): Promise<string | undefined> {
  return pool
    .query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()')
    .then(
      (r) => r.rows[0]?.id,
      () => undefined,
    );
}
