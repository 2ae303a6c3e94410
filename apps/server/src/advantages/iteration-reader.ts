import {
  ALL_BATCH_INPUTS,
  type BatchInput,
  type ColumnarBatch,
  type Outcome,
} from '@creditlab/estimators';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { isUuid } from '../database/uuid';
import { readBinaryCopy } from './binary-copy';
import { IterationColumns, StepColumns } from './iteration-columns';
import { idText } from './text-id-dictionary';
import type { TrajectoryShape } from './trajectory-shape';

export type { TrajectoryShape };

/** An iteration as it stood at one log position: its shape, and optionally its steps as a batch. */
export interface IterationSnapshot {
  iteration: number;
  /** Seq of the last event that changed the iteration's steps or outcomes: what the data reflects. */
  inputsSeq: number;
  stepCount: number;
  shape: TrajectoryShape[];
  /** The estimators' input (empty trajectories left out, as the library requires); null if no steps. */
  batch: ColumnarBatch | null;
}

type Client = pg.Pool | pg.PoolClient;

export interface ReadOptions {
  /** false: the shape and log position only. */
  steps: boolean;
  /** What the method reads of a batch (methodInputs); everything when absent. */
  inputs?: ReadonlySet<BatchInput>;
  /** A cache of texts by id the caller may keep across calls (a run's texts never change). */
  texts?: Map<string, string>;
}

const EVERYTHING: ReadonlySet<BatchInput> = new Set(ALL_BATCH_INPUTS);

/**
 * The one reader of iterations: canonical order (group, then trajectory, in order of first
 * appearance; then step index), the resolved outcomes, and the log position read, all from one
 * snapshot of the database, so the shape, the steps and the position always agree even while
 * ingest appends to the iteration. `texts` is a cache the caller may keep across calls (a run's
 * texts never change).
 */
export async function readIterations(
  db: Client,
  runId: string,
  iterations: number[],
  options: ReadOptions = { steps: true },
): Promise<Map<number, IterationSnapshot>> {
  return inSnapshot(db, async (client) => {
    const out = await readShapes(client, runId, iterations);
    if (options.steps)
      await readBatches(
        client,
        runId,
        out,
        options.inputs ?? EVERYTHING,
        options.texts ?? new Map(),
      );
    return out;
  });
}

/** One iteration (see readIterations); undefined when it holds no rollouts. */
export async function readIteration(
  db: Client,
  runId: string,
  iteration: number,
  options: ReadOptions = { steps: true },
): Promise<IterationSnapshot | undefined> {
  return (await readIterations(db, runId, [iteration], options)).get(iteration);
}

/** Runs `work` in one repeatable-read, read-only transaction (one snapshot for every statement). */
async function inSnapshot<T>(db: Client, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const pooled = 'release' in db ? undefined : await (db as pg.Pool).connect();
  const client = pooled ?? (db as pg.PoolClient);
  if (!pooled) return work(client); // the caller's transaction is the snapshot
  try {
    // An iteration's rows are one range of the steps primary key, already in canonical order: an
    // index scan streams them in that order, where a bitmap scan (which the planner picks when its
    // row estimate is low, e.g. before the table is analysed) must sort them again. One round trip.
    await client.query(
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL enable_bitmapscan = off',
    );
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    pooled.release();
  }
}

type ShapeRow = {
  iteration: number;
  inputs_seq: string;
  group_key: string | null;
  key: string | null;
  group_ord: number;
  ord: number;
  outcome: Outcome;
  step_count: number;
};

/** Each iteration's log position and trajectories, in one statement (metrics-only iterations left out). */
async function readShapes(
  client: pg.PoolClient,
  runId: string,
  iterations: number[],
): Promise<Map<number, IterationSnapshot>> {
  const res = await client.query<ShapeRow>(
    `SELECT it.iteration, it.inputs_seq, g.key AS group_key, t.key, t.group_ord, t.ord, t.outcome,
            t.step_count
     FROM iterations it
     LEFT JOIN trajectories t ON t.run_id = it.run_id AND t.iteration = it.iteration
     LEFT JOIN rollout_groups g
       ON g.run_id = t.run_id AND g.iteration = t.iteration AND g.ord = t.group_ord
     WHERE it.run_id = $1 AND it.iteration = ANY($2::int[]) AND it.inputs_seq IS NOT NULL
     ORDER BY it.iteration, t.group_ord, t.ord`,
    [runId, iterations],
  );
  const out = new Map<number, IterationSnapshot>();
  for (const r of res.rows) {
    let it = out.get(r.iteration);
    if (!it) {
      it = {
        iteration: r.iteration,
        inputsSeq: Number(r.inputs_seq),
        stepCount: 0,
        shape: [],
        batch: null,
      };
      out.set(r.iteration, it);
    }
    if (r.key === null) continue; // no trajectories (yet)
    it.shape.push({
      groupId: r.group_key as string,
      trajectoryId: r.key,
      groupOrd: r.group_ord,
      trajOrd: r.ord,
      outcome: r.outcome,
      length: r.step_count,
      offset: it.stepCount,
    });
    it.stepCount += r.step_count;
  }
  return out;
}

/**
 * Reads the steps of every iteration with rows in one binary COPY, in canonical order (the steps
 * table's primary key order), only the columns `inputs` names, each row decoded straight into its
 * iteration's typed arrays; then the texts, if the method reads them.
 */
async function readBatches(
  client: pg.PoolClient,
  runId: string,
  out: Map<number, IterationSnapshot>,
  inputs: ReadonlySet<BatchInput>,
  texts: Map<string, string>,
): Promise<void> {
  const withSteps = [...out.values()]
    .filter((it) => it.stepCount > 0)
    .sort((a, b) => a.iteration - b.iteration);
  if (withSteps.length === 0) return;
  const columns = new StepColumns(inputs);
  const iterations = withSteps.map((it) => new IterationColumns(it.shape, columns));
  let at = 0;
  let left = (iterations[0] as IterationColumns).stepCount;
  const copy = client.query(copyTo(stepsCopy(runId, withSteps, columns)));
  await readBinaryCopy(copy, columns.names.length, (row) => {
    while (left === 0) left = (iterations[++at] as IterationColumns | undefined)?.stepCount ?? -1;
    if (left < 0) throw new Error(`run ${runId}: more step rows than its trajectories count`);
    (iterations[at] as IterationColumns).add(row);
    left--;
  });
  const stateTexts = columns.stateText
    ? await textsOf(client, runId, iterations, 'states', texts)
    : undefined;
  const actionTexts = columns.actionText
    ? await textsOf(client, runId, iterations, 'actions', texts)
    : undefined;
  withSteps.forEach((it, i) => {
    it.batch = (iterations[i] as IterationColumns).build(
      stateTexts?.[i] ?? [],
      actionTexts?.[i] ?? [],
    );
  });
}

/** COPY takes no bind parameters: the run id is checked to be a UUID and the iterations integers. */
function stepsCopy(runId: string, its: IterationSnapshot[], columns: StepColumns): string {
  if (!isUuid(runId)) throw new Error(`not a run id: ${JSON.stringify(runId)}`);
  const list = its.map((it) => {
    if (!Number.isInteger(it.iteration)) throw new Error(`not an iteration: ${it.iteration}`);
    return it.iteration;
  });
  return `COPY (SELECT ${columns.names.join(', ')} FROM steps
                WHERE run_id = '${runId}' AND iteration = ANY('{${list.join(',')}}'::int[])
                ORDER BY iteration, group_ord, traj_ord, idx) TO STDOUT (FORMAT binary)`;
}

/** Per iteration, the texts behind its state (or action) ids, loading those `texts` does not hold yet. */
async function textsOf(
  client: pg.PoolClient,
  runId: string,
  iterations: IterationColumns[],
  which: 'states' | 'actions',
  texts: Map<string, string>,
): Promise<string[][]> {
  const ids = iterations.map((it) => {
    const d = it[which];
    return d.idsHi.map((hi, j) => idText(hi, d.idsLo[j] as number));
  });
  const missing = [...new Set(ids.flat().filter((id) => !texts.has(id)))];
  if (missing.length > 0) {
    const res = await client.query<[string, string]>({
      text: 'SELECT id, text FROM texts WHERE run_id = $1 AND id = ANY($2::bigint[])',
      values: [runId, missing],
      rowMode: 'array',
    });
    for (const [id, text] of res.rows) texts.set(id, text);
  }
  return ids.map((list) => list.map((id) => texts.get(id) as string));
}
