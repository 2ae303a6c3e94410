import { rm } from 'node:fs/promises';
import type { TestPostgres } from './global-setup';
import { stopRun } from './process-registry';

/**
 * Stops the run's PostgreSQL (removing its data) and anything the run started that still runs, then
 * removes the run's scratch folder (its temporary files).
 */
export default async function globalTeardown(): Promise<void> {
  const pg = (globalThis as { __creditlabTestPg?: TestPostgres }).__creditlabTestPg;
  await pg?.stop().catch(() => undefined);
  await stopRun();
  if (pg) await rm(pg.root, { recursive: true, force: true });
  const scratch = (globalThis as { __creditlabScratch?: string }).__creditlabScratch;
  if (scratch) await rm(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
