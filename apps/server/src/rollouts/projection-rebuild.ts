import { validateEvent } from '@creditlab/events';
import type pg from 'pg';
import { notifyRebuilt } from '../database/notifications';
import { runNotFound } from '../errors/domain-error';
import { wireEvent } from './event-body';
import { lockRun } from './run-lock';
import { RunProjector, type RunSummary, type SequencedEvent } from './run-projector';

/**
 * The version of the projection code: runs whose projections an older version built
 * (`runs.projection_version`) are rebuilt from their events at start-up. Bump it whenever the
 * projections' rows would come out differently from the same events.
 */
export const PROJECTION_VERSION = 2; // 2: steps stored as slices (migrations/20261206000000_step_slices)

/** Tables rebuilt from the log; the order is the order they are emptied in (foreign keys). */
export const PROJECTION_TABLES = [
  'step_slices',
  'trajectories',
  'rollout_groups',
  'texts',
  'iterations',
  'run_metrics',
];

const EVENTS_PER_READ = 100;

interface StoredEvent {
  seq: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  body: Buffer | null;
  recorded_at: Date;
}

/**
 * Drops a run's projections and builds them again from its events, through the same projector
 * that maintains them at ingest (so the rows come out the same, byte for byte), in one
 * transaction with the run's row locked. Returns how many events and steps it replayed.
 */
export async function rebuildRun(
  pool: pg.Pool,
  runId: string,
  options = { onlyIfOutdated: false },
): Promise<{ events: number; steps: number } | undefined> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL creditlab.rebuild = 'on'`);
    if (!(await lockRun(client, runId))) throw runNotFound(runId);
    if (options.onlyIfOutdated) {
      // Another server starting at the same time may have rebuilt it while this one waited.
      const v = await client.query<{ v: number }>(
        'SELECT projection_version AS v FROM runs WHERE id = $1',
        [runId],
      );
      if ((v.rows[0]?.v ?? 0) >= PROJECTION_VERSION) {
        await client.query('ROLLBACK');
        return undefined;
      }
    }
    // The packed columns are a cache of the projections (iteration_columns): gone with them.
    await client.query('DELETE FROM iteration_columns WHERE run_id = $1', [runId]);
    for (const table of PROJECTION_TABLES)
      await client.query(`DELETE FROM ${table} WHERE run_id = $1`, [runId]);
    const projector = new RunProjector(client, runId, EMPTY_RUN, (position, path, reason) => {
      throw new Error(`event ${position} of run ${runId} cannot be projected: ${path}: ${reason}`);
    });
    let events = 0;
    for (let after = 0; ;) {
      const res = await client.query<StoredEvent>(
        `SELECT seq, id, type, data, body, recorded_at FROM events
         WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT ${EVENTS_PER_READ}`,
        [runId, after],
      );
      if (res.rows.length === 0) break;
      await replay(projector, runId, res.rows);
      events += res.rows.length;
      after = Number((res.rows.at(-1) as StoredEvent).seq);
    }
    await projector.finish();
    await client.query('UPDATE runs SET projection_version = $2 WHERE id = $1', [
      runId,
      PROJECTION_VERSION,
    ]);
    // Packers that remember how far they packed this run would otherwise never pack it again.
    await notifyRebuilt(client, runId);
    await client.query('COMMIT');
    return { events, steps: projector.stepCount };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}

/** The summary of a run before its first event. */
const EMPTY_RUN: RunSummary = {
  lastSeq: 0,
  lastIteration: null,
  embeddingDim: null,
  status: 'running',
  summary: null,
  finishedAt: null,
};

/** Projects stored events again, checking each step-bearing one lands where it landed on arrival. */
async function replay(projector: RunProjector, runId: string, rows: StoredEvent[]): Promise<void> {
  const batch: SequencedEvent[] = [];
  for (const row of rows) {
    const seq = Number(row.seq);
    const valid = validateEvent(wireEvent(row), 'server');
    if (!valid.ok)
      throw new Error(
        `event ${seq} of run ${runId} no longer validates: ${valid.issue.path}: ${valid.issue.message}`,
      );
    batch.push({
      seq,
      position: seq,
      event: valid.event,
      body: row.body,
      recordedAt: row.recorded_at,
    });
  }
  const { placed, write } = await projector.project(batch);
  await write([]);
  batch.forEach((e, n) => {
    const stored = storedSlices(rows.find((r) => Number(r.seq) === e.seq) as StoredEvent);
    const again = placed[n] ?? [];
    if (JSON.stringify(stored) !== JSON.stringify(again))
      throw new Error(`event ${e.seq} of run ${runId} lands elsewhere than it did on arrival`);
  });
}

/** Where a stored step-bearing event's slices landed on arrival (the data the log keeps). */
function storedSlices(row: StoredEvent): { firstStepIndex: number; stepCount: number }[] {
  const place = (s: { firstStepIndex: number; stepCount: number }) => ({
    firstStepIndex: s.firstStepIndex,
    stepCount: s.stepCount,
  });
  if (row.type === 'steps.appended') return [place(row.data as never)];
  if (row.type !== 'rollouts.appended') return [];
  const groups = row.data.groups as {
    trajectories: { firstStepIndex: number; stepCount: number }[];
  }[];
  return groups.flatMap((g) => g.trajectories.map(place));
}

/** Rebuilds every run whose projections an older projection version built; returns their ids. */
export async function rebuildOutdatedRuns(
  pool: pg.Pool,
  onRun: (runId: string, replayed: { events: number; steps: number }) => void = () => undefined,
): Promise<string[]> {
  const res = await pool.query<{ id: string }>(
    'SELECT id FROM runs WHERE projection_version < $1 ORDER BY created_at, id',
    [PROJECTION_VERSION],
  );
  const rebuilt: string[] = [];
  for (const { id } of res.rows) {
    const replayed = await rebuildRun(pool, id, { onlyIfOutdated: true });
    if (!replayed) continue;
    onRun(id, replayed);
    rebuilt.push(id);
  }
  return rebuilt;
}
