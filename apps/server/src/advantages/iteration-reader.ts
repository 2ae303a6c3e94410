import { ALL_BATCH_INPUTS, type BatchInput, type ColumnarBatch } from '@creditlab/estimators';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { isUuid } from '../database/uuid';
import { readBinaryCopy, type TupleFields } from './binary-copy';
import { IterationColumns, StepColumns, type TextIds } from './iteration-columns';
import {
  iterationList,
  SHAPE_STATEMENTS,
  shapesFrom,
  shapesQuery,
  type IterationHead,
} from './iteration-shapes';
import { PACKED_COLUMNS, packedServes, unpackIteration } from './packed-columns';
import { SliceSteps } from './slice-steps';
import { idText } from './text-id-dictionary';
import type { TrajectoryShape } from './trajectory-shape';

export type { TrajectoryShape };

/** An iteration as it stood at one log position, and optionally its steps as a batch. */
export interface IterationSnapshot extends IterationHead {
  /** The estimators' input (empty trajectories left out, as the library requires); null if no steps. */
  batch: ColumnarBatch | null;
  /** The stored text ids behind the batch's state and action ids (with the batch). */
  textIds?: { states: TextIds; actions: TextIds };
}

export interface ReadOptions {
  /** false: the shape and log position only. */
  steps: boolean;
  /** What the method reads of a batch (methodInputs); everything when absent. */
  inputs?: ReadonlySet<BatchInput>;
  /** A cache of texts by id the caller may keep across calls (a run's texts never change). */
  texts?: Map<string, string>;
  /** false: read the step slices even where iteration_columns holds the iteration packed. */
  packed?: boolean;
  /**
   * One more statement (literal SQL) for the first round trip, in the same snapshot as the shapes,
   * and whether its rows make the steps unnecessary (a stored result at the position read): then
   * no steps are read.
   */
  first?: { sql: string; enough(rows: pg.QueryResultRow[]): boolean };
  /**
   * A connection already in a REPEATABLE READ transaction to read in (an export's snapshot): the
   * read then sees what that transaction sees, and leaves the transaction open.
   */
  within?: pg.ClientBase;
}

const EVERYTHING: ReadonlySet<BatchInput> = new Set(ALL_BATCH_INPUTS);

/**
 * The one reader of iterations: canonical order (group, then trajectory, in order of first
 * appearance; then step index), the resolved outcomes, and the log position read, all from one
 * snapshot of the database, so the shape, the steps and the position always agree even while
 * ingest appends to the iteration. An iteration packed at its current position is read from its
 * one iteration_columns row, unless the method reads embeddings (packed rows hold none); the
 * others from their step slices.
 */
export async function readIterations(
  pool: pg.Pool,
  runId: string,
  iterations: number[],
  options: ReadOptions = { steps: true },
): Promise<Map<number, IterationSnapshot>> {
  checkLiterals(runId, iterations);
  if (options.within) return readInTransaction(options.within, runId, iterations, options, false);
  const client = await pool.connect();
  let out: Map<number, IterationSnapshot>;
  try {
    out = await readInTransaction(client, runId, iterations, options, true);
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

/** The reads of readIterations on `client`, in the transaction it opens (`begin`) or is already in. */
async function readInTransaction(
  client: pg.ClientBase,
  runId: string,
  iterations: number[],
  options: ReadOptions,
  begin: boolean,
): Promise<Map<number, IterationSnapshot>> {
  // One round trip opens the snapshot and reads the shapes. An iteration's rows are one range of
  // the steps primary key, already in canonical order: an index scan streams them in that order,
  // where a bitmap scan (which the planner picks on a low row estimate, e.g. before the table is
  // analysed) sorts them again.
  const results = (await client.query(
    `${begin ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;' : ''} SET LOCAL enable_bitmapscan = off;
     ${shapesQuery(runId, iterations, options.packed !== false)};
     ${options.first?.sql ?? ''}`,
  )) as unknown as pg.QueryResult[];
  const lead = begin ? 2 : 1;
  const heads = shapesFrom(results.slice(lead, lead + SHAPE_STATEMENTS));
  const out = new Map([...heads].map(([i, head]) => [i, { ...head, batch: null }]));
  const first = results[lead + SHAPE_STATEMENTS] as pg.QueryResult;
  const enough = options.first?.enough(first.rows) ?? false;
  if (options.steps && !enough) {
    const inputs = options.inputs ?? EVERYTHING;
    await readBatches(client, runId, out, inputs, options.texts ?? new Map());
  }
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

/** An iteration's columns, read, waiting for their texts to become a batch. */
interface Unbuilt extends Record<'states' | 'actions', TextIds> {
  build(stateTexts: string[], actionTexts: string[]): ColumnarBatch;
}

/**
 * Reads the steps of every iteration with steps, only the columns `inputs` names, each decoded
 * straight into its iteration's typed arrays: the packed ones with one binary COPY of their
 * iteration_columns rows, the others with one of their step rows; then the texts, if the method
 * reads them.
 */
async function readBatches(
  client: pg.ClientBase,
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
  const read = new Map<number, Unbuilt>();
  // A method that reads embeddings reads the step slices: packed rows do not hold them.
  const fromPacked = (it: IterationSnapshot) => it.packed && packedServes(inputs);
  await readPacked(client, runId, withSteps.filter(fromPacked), columns, read);
  await readSteps(
    client,
    runId,
    withSteps.filter((it) => !fromPacked(it)),
    columns,
    read,
  );
  const unbuilt = withSteps.map((it) => read.get(it.iteration) as Unbuilt);
  const stateTexts = columns.stateText
    ? await textsOf(client, runId, unbuilt, 'states', texts)
    : undefined;
  const actionTexts = columns.actionText
    ? await textsOf(client, runId, unbuilt, 'actions', texts)
    : undefined;
  withSteps.forEach((it, i) => {
    const u = unbuilt[i] as Unbuilt;
    it.batch = u.build(stateTexts?.[i] ?? [], actionTexts?.[i] ?? []);
    it.textIds = { states: u.states, actions: u.actions };
  });
}

/** One binary COPY of the packed rows, only the columns the method reads (the others as NULL). */
async function readPacked(
  client: pg.ClientBase,
  runId: string,
  its: IterationSnapshot[],
  columns: StepColumns,
  read: Map<number, Unbuilt>,
): Promise<void> {
  if (its.length === 0) return;
  const wanted = [true, columns.state, columns.action, columns.nllAt >= 0, columns.valueAt >= 0];
  wanted.push(columns.nextAt >= 0);
  const select = PACKED_COLUMNS.map((c, i) => (wanted[i] ? c : 'NULL'));
  // The first round trip found these fresh in this same snapshot: no need to check again.
  const copy = client.query(
    copyTo(`COPY (SELECT iteration, ${select.join(', ')} FROM iteration_columns
                  WHERE ${iterationList(
                    runId,
                    its.map((it) => it.iteration),
                  )}) TO STDOUT (FORMAT binary)`),
  );
  const shapes = new Map(its.map((it) => [it.iteration, it.shape]));
  await readBinaryCopy(copy, 1 + PACKED_COLUMNS.length, (f) => {
    const iteration = f.buf.readInt32BE(f.start[0] as number);
    read.set(iteration, unpackIteration(f, shapes.get(iteration) as TrajectoryShape[], columns));
  });
}

/** One binary COPY of the iterations' step slices, in canonical order (step_slices' primary key order). */
async function readSteps(
  client: pg.ClientBase,
  runId: string,
  its: IterationSnapshot[],
  columns: StepColumns,
  read: Map<number, Unbuilt>,
): Promise<void> {
  if (its.length === 0) return;
  const iterations = its.map((it) => new IterationColumns(it.shape, columns));
  let at = 0;
  let left = (iterations[0] as IterationColumns).stepCount;
  const copy = client.query(copyTo(slicesCopy(runId, its, columns)));
  const slices = new SliceSteps(columns.names.length);
  const addStep = (step: TupleFields) => {
    while (left === 0) left = (iterations[++at] as IterationColumns | undefined)?.stepCount ?? -1;
    if (left < 0) throw new Error(`run ${runId}: more steps than its trajectories count`);
    (iterations[at] as IterationColumns).add(step);
    left--;
  };
  await readBinaryCopy(copy, columns.names.length + 1, (row) => slices.each(row, addStep));
  its.forEach((it, i) => read.set(it.iteration, iterations[i] as IterationColumns));
}

/** The iterations' step slices in canonical order: the columns read, then each slice's step count. */
function slicesCopy(runId: string, its: IterationSnapshot[], columns: StepColumns): string {
  const list = its.map((it) => it.iteration);
  const embeddings = columns.embeddingAt >= 0;
  return `COPY (SELECT ${columns.names.map(sliceColumnSql).join(', ')}, step_count FROM step_slices
                ${embeddings ? EMBEDDINGS_FROM_BODY : ''}
                WHERE ${iterationList(runId, list)}
                ORDER BY iteration, group_ord, traj_ord, first_idx) TO STDOUT (FORMAT binary)`;
}

/**
 * A slice's span of its event's body that holds its embeddings (`block`), where they are stored there
 * (migrations/20261211000000_embeddings_in_the_log): read at once, then cut into vectors
 * (sliceColumnSql). Bodies are stored uncompressed, so only the TOAST chunks of the span are read.
 * `OFFSET 0` keeps the planner from pulling the subquery up, which would fetch the span once per
 * vector cut from it; one read per slice took half the time of a function doing the same per slice.
 */
const EMBEDDINGS_FROM_BODY = `LEFT JOIN LATERAL (
    SELECT substr(e.body, step_slices.embedding_at + 1, step_slices.step_count * step_slices.embedding_width) AS block
    FROM events e
    WHERE step_slices.embedding_at IS NOT NULL AND e.run_id = step_slices.run_id AND e.seq = step_slices.seq
    OFFSET 0) vectors ON true`;

/** A column of the slices as SQL: the embeddings one per step, wherever they are stored. */
function sliceColumnSql(name: string): string {
  if (name !== 'embedding') return name;
  return `CASE WHEN embedding_at IS NULL THEN embedding
               ELSE ARRAY(SELECT substr(vectors.block, k * embedding_width + 1, embedding_width)
                          FROM generate_series(0, step_count - 1) AS k ORDER BY k) END`;
}

/** Per iteration, the texts behind its state (or action) ids, loading those `texts` does not hold yet. */
async function textsOf(
  client: pg.ClientBase,
  runId: string,
  iterations: Unbuilt[],
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
