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
  pool: pg.Pool,
  runId: string,
  iterations: number[],
  options: ReadOptions = { steps: true },
): Promise<Map<number, IterationSnapshot>> {
  checkLiterals(runId, iterations);
  const client = await pool.connect();
  let out: Map<number, IterationSnapshot>;
  try {
    // One round trip opens the snapshot and reads the shapes. An iteration's rows are one range of
    // the steps primary key, already in canonical order: an index scan streams them in that order,
    // where a bitmap scan (which the planner picks on a low row estimate, e.g. before the table is
    // analysed) sorts them again.
    const results = (await client.query(
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL enable_bitmapscan = off;
       ${shapesQuery(runId, iterations)}`,
    )) as unknown as pg.QueryResult<ShapeRow>[];
    out = shapesFrom((results[2] as pg.QueryResult<ShapeRow>).rows);
    if (options.steps) {
      const inputs = options.inputs ?? EVERYTHING;
      await readBatches(client, runId, out, inputs, options.texts ?? new Map());
    }
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
    throw e;
  }
  // A read-only transaction has nothing to commit: the caller need not wait for it.
  client.query('COMMIT').then(
    () => client.release(),
    (e: Error) => client.release(e),
  );
  return out;
}

/** One iteration (see readIterations); undefined when it holds no rollouts. */
export async function readIteration(
  pool: pg.Pool,
  runId: string,
  iteration: number,
  options: ReadOptions = { steps: true },
): Promise<IterationSnapshot | undefined> {
  return (await readIterations(pool, runId, [iteration], options)).get(iteration);
}

/** The reads go as text (a multi-statement query and COPY take no bind parameters): checked first. */
function checkLiterals(runId: string, iterations: number[]): void {
  if (!isUuid(runId)) throw new Error(`not a run id: ${JSON.stringify(runId)}`);
  for (const i of iterations)
    if (!Number.isInteger(i)) throw new Error(`not an iteration: ${JSON.stringify(i)}`);
}

const iterationList = (runId: string, iterations: number[], table = '') =>
  `${table}run_id = '${runId}' AND ${table}iteration = ANY('{${iterations.join(',')}}'::int[])`;

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
function shapesQuery(runId: string, iterations: number[]): string {
  return `SELECT it.iteration, it.inputs_seq, g.key AS group_key, t.key, t.group_ord, t.ord, t.outcome,
                 t.step_count
          FROM iterations it
          LEFT JOIN trajectories t ON t.run_id = it.run_id AND t.iteration = it.iteration
          LEFT JOIN rollout_groups g
            ON g.run_id = t.run_id AND g.iteration = t.iteration AND g.ord = t.group_ord
          WHERE ${iterationList(runId, iterations, 'it.')} AND it.inputs_seq IS NOT NULL
          ORDER BY it.iteration, t.group_ord, t.ord`;
}

function shapesFrom(rows: ShapeRow[]): Map<number, IterationSnapshot> {
  const out = new Map<number, IterationSnapshot>();
  for (const r of rows) {
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

function stepsCopy(runId: string, its: IterationSnapshot[], columns: StepColumns): string {
  const list = its.map((it) => it.iteration);
  return `COPY (SELECT ${columns.names.join(', ')} FROM steps WHERE ${iterationList(runId, list)}
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
