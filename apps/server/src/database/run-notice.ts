import type pg from 'pg';

/** The channel a run's changes are announced on; the payload is the run's id. */
export const RUN_CHANNEL = 'creditlab_run';

/**
 * The statement that announces a change of run `runId` (inside a transaction: when it commits). Apart
 * from notifications.ts, which listens, so that ingest's modules, which the preparing thread loads
 * too, need no Nest.
 */
export function runNotice(runId: string): pg.QueryConfig {
  return { text: 'SELECT pg_notify($1, $2)', values: [RUN_CHANNEL, runId] };
}
