import { rm } from 'node:fs/promises';
import type { TestPostgres } from './global-setup';
import { stopRun } from './process-registry';

/**
 * Stops the run's PgBouncer and PostgreSQL (removing their files) and anything the run started that still runs, then
 * removes the run's scratch folder (its temporary files).
 */
export default async function globalTeardown(): Promise<void> {
  const bouncer = (globalThis as { __creditlabTestPgBouncer?: TestPostgres })
    .__creditlabTestPgBouncer;
  await bouncer?.stop().catch(() => undefined);
  const pg = (globalThis as { __creditlabTestPg?: TestPostgres }).__creditlabTestPg;
  await pg?.stop().catch(() => undefined);
  await stopRun();
  for (const started of [bouncer, pg])
    if (started) await rm(started.root, { recursive: true, force: true });
  const scratch = (globalThis as { __creditlabScratch?: string }).__creditlabScratch;
  if (scratch) await rm(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
