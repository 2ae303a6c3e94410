import { MIGRATIONS_DIR, runMigrations } from '@creditlab/db';
import type pg from 'pg';
import { backfillEventHashes } from '../rollouts/event-hash-backfill';
import { rebuildOutdatedRuns } from '../rollouts/projection-rebuild';

/**
 * Brings a database to what this code expects: pending migrations (under their advisory lock),
 * then the data steps a migration leaves to the code — projections rebuilt from the log for runs
 * an older projection version built, body hashes for events stored before they existed. Run by
 * the server on start and by `npm run db:migrate`; each step does nothing when nothing is due.
 */
export async function prepareDatabase(pool: pg.Pool, log: (line: string) => void): Promise<void> {
  const migrations = await runMigrations(pool, MIGRATIONS_DIR, { onWait: log });
  if (migrations.applied.length) log(`applied migrations: ${migrations.applied.join(', ')}`);
  const rebuilt = await rebuildOutdatedRuns(pool, (runId, r) =>
    log(`rebuilt the projections of run ${runId} from its ${r.events} events (${r.steps} steps)`),
  );
  if (rebuilt.length) log(`rebuilt the projections of ${rebuilt.length} runs`);
  const hashed = await backfillEventHashes(pool);
  if (hashed) log(`computed the body hash of ${hashed} events stored before body hashes`);
}
