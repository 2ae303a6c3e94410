import { EmbeddedPostgresError, OWN_POSTGRES, reasonOf } from './embedded-postgres-error';
import { PostmasterStartError } from './postmaster';

interface Context {
  dataDir: string;
  port: number;
}

/** PostgreSQL's messages for the failures an operator can fix, with the fix. */
const KNOWN: { said: RegExp; reason: (c: Context) => string; remedy: (c: Context) => string }[] = [
  {
    said: /could not bind|could not create any TCP\/IP sockets|Address already in use/,
    reason: (c) => `port ${c.port} is in use by another program`,
    remedy: () => 'Set CREDITLAB_PG_PORT to a free port.',
  },
  {
    said: /pre-existing shared memory block/,
    reason: () => 'processes of an earlier PostgreSQL on this data directory are still running',
    remedy: () =>
      'Wait a few seconds and start again; if it persists, stop them (ps -ef | grep postgres).',
  },
  {
    said: /lock file .* already exists/,
    reason: () => 'another PostgreSQL holds the lock on this data directory',
    remedy: (c) =>
      `Stop it (its pid is the first line of ${c.dataDir}/postmaster.pid), or choose another CREDITLAB_PG_DIR.`,
  },
  {
    said: /has invalid permissions/,
    reason: () => 'its data directory may be entered by others, which PostgreSQL refuses',
    remedy: (c) => `chmod 700 ${c.dataDir}`,
  },
  {
    said: /incompatible with server|was initialized by PostgreSQL version/,
    reason: () => 'the data directory was made by another major version of PostgreSQL',
    remedy: () =>
      'Start the Creditlab version that made it and export the data (pg_dump), or choose another CREDITLAB_PG_DIR.',
  },
];

/**
 * Turns a failed start of PostgreSQL into an EmbeddedPostgresError: a known cause (port taken,
 * permissions, another version's data) with its remedy, else PostgreSQL's last lines.
 */
export function explainStartFailure(
  e: unknown,
  dataDir: string,
  port: number,
): EmbeddedPostgresError {
  const what = `starting PostgreSQL on port ${port} with the data directory ${dataDir}`;
  const lines = e instanceof PostmasterStartError ? e.lines : [];
  for (const known of KNOWN) {
    const line = lines.find((l) => known.said.test(l));
    if (line) {
      const c = { dataDir, port };
      return new EmbeddedPostgresError(
        what,
        `${known.reason(c)} (PostgreSQL said: ${line.trim()})`,
        `${known.remedy(c)} ${OWN_POSTGRES}`,
      );
    }
  }
  return new EmbeddedPostgresError(
    what,
    reasonOf(e),
    `Fix what PostgreSQL reports and start again. ${OWN_POSTGRES}`,
  );
}
