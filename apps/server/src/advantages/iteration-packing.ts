import type pg from 'pg';
import { readIterations, type IterationSnapshot } from './iteration-reader';
import {
  PACKED_COLUMNS,
  PACKED_FORMAT,
  PACKED_INPUTS,
  packIteration,
  type PackedIteration,
} from './packed-columns';

/** Iterations packed per read and write: as many as a recompute job reads at once. */
const CHUNK = 16;

/**
 * Where a run stood when a pass of the packer had packed every complete iteration: its log position
 * and its last iteration. A later pass need only look at the iterations whose inputs changed since
 * (`inputs_seq` above `seq`) and at those not complete then (from `lastIteration` on), rather than
 * at every iteration of the run after every append (which grew with the run).
 */
export interface PackedUpTo {
  seq: number;
  lastIteration: number;
}

/** Before any pass: every iteration is looked at. */
export const NOTHING_PACKED: PackedUpTo = { seq: 0, lastIteration: -1 };

/**
 * Packs the run's complete iterations that lack a fresh packed row, CHUNK at a time until none is
 * left (or `stopped` says so), looking only at what may have changed since `since`. Returns how
 * many it packed, and where the run stood if it packed everything (the next pass's `since`).
 */
export async function packRun(
  pool: pg.Pool,
  runId: string,
  stopped: () => boolean = () => false,
  since: PackedUpTo = NOTHING_PACKED,
): Promise<{ packed: number; upTo: PackedUpTo | undefined }> {
  // Read before looking: whatever lands later has a larger seq, or completes an iteration from here on.
  const run = await pool.query<{ seq: string; last: number | null }>(
    'SELECT last_seq AS seq, last_iteration AS last FROM runs WHERE id = $1',
    [runId],
  );
  const at = run.rows[0];
  let packed = 0;
  for (;;) {
    const todo = await unpackedIterations(pool, runId, since);
    if (todo.length === 0)
      return { packed, upTo: at && { seq: Number(at.seq), lastIteration: at.last ?? -1 } };
    if (stopped()) return { packed, upTo: undefined };
    const now = await packIterations(pool, runId, todo);
    if (now === 0) return { packed, upTo: undefined }; // nothing came back to pack (cannot happen; never loop on it)
    packed += now;
  }
}

/**
 * Up to CHUNK complete iterations of the run with steps and no packed row at their current position,
 * among those changed since `since` or not complete then.
 */
async function unpackedIterations(
  pool: pg.Pool,
  runId: string,
  since: PackedUpTo,
): Promise<number[]> {
  const res = await pool.query<{ iteration: number }>(
    `SELECT it.iteration FROM iterations it
     JOIN runs r ON r.id = it.run_id
     LEFT JOIN iteration_columns c
       ON c.run_id = it.run_id AND c.iteration = it.iteration AND c.inputs_seq = it.inputs_seq
          AND c.format = $2
     WHERE it.run_id = $1 AND it.step_count > 0 AND c.run_id IS NULL
       AND (r.status <> 'running' OR it.iteration < r.last_iteration)
       AND (it.inputs_seq > $3 OR it.iteration >= $4)
     ORDER BY it.iteration LIMIT ${CHUNK}`,
    [runId, PACKED_FORMAT, since.seq, since.lastIteration],
  );
  return res.rows.map((r) => r.iteration);
}

/** Reads the iterations from the step slices in one snapshot, packs and stores them; returns how many. */
async function packIterations(pool: pg.Pool, runId: string, iterations: number[]): Promise<number> {
  const read = await readIterations(pool, runId, iterations, {
    steps: true,
    inputs: PACKED_INPUTS,
    packed: false,
  });
  const rows = [...read.values()]
    .filter((it): it is IterationSnapshot & Required<Pick<IterationSnapshot, 'textIds'>> =>
      Boolean(it.batch && it.textIds),
    )
    .map((it) =>
      packIteration(
        it.iteration,
        it.inputsSeq,
        it.shape,
        it.batch as NonNullable<typeof it.batch>,
        it.textIds,
      ),
    );
  await storePacked(pool, runId, rows);
  return rows.length;
}

/**
 * Rows per INSERT: a statement takes at most 65,535 parameters, and a row takes ten. A pass stores
 * CHUNK rows at a time; an append may store thousands (a spool of small iterations sent at once).
 */
const ROWS_PER_STATEMENT = 1000;

/**
 * Upserts packed rows, ROWS_PER_STATEMENT per statement. A row stays if it is at a later position
 * already (another pass read the iteration after this one did); one at an earlier position or of
 * another format is replaced. Ingest sends the same statements (packedUpserts) with a chunk's
 * others, in the appending transaction (in-hand-packing.ts).
 */
export async function storePacked(
  pool: pg.Pool | pg.PoolClient,
  runId: string,
  rows: PackedIteration[],
): Promise<void> {
  for (const statement of packedUpserts(runId, rows)) await pool.query(statement);
}

/** The statements that upsert packed rows, ROWS_PER_STATEMENT rows each (none for no rows). */
export function packedUpserts(runId: string, rows: PackedIteration[]): pg.QueryConfig[] {
  const statements: pg.QueryConfig[] = [];
  for (let at = 0; at < rows.length; at += ROWS_PER_STATEMENT)
    statements.push(packedUpsert(runId, rows.slice(at, at + ROWS_PER_STATEMENT)));
  return statements;
}

function packedUpsert(runId: string, rows: PackedIteration[]): pg.QueryConfig {
  const values: unknown[] = [runId, PACKED_FORMAT];
  const tuples = rows.map((r) => {
    const at = values.length;
    values.push(r.iteration, r.inputsSeq, JSON.stringify(r.shape));
    values.push(...PACKED_COLUMNS.map((c) => r.columns[c]));
    const p = (k: number) => `$${at + k}`;
    const columns = PACKED_COLUMNS.map((_, k) => `${p(4 + k)}::bytea`);
    return `($1, ${p(1)}::int, ${p(2)}::bigint, $2::smallint, ${p(3)}::jsonb, ${columns.join(', ')})`;
  });
  const set = ['inputs_seq', 'format', 'shape', ...PACKED_COLUMNS].map(
    (c) => `${c} = EXCLUDED.${c}`,
  );
  return {
    text: `INSERT INTO iteration_columns (run_id, iteration, inputs_seq, format, shape, ${PACKED_COLUMNS.join(', ')})
     VALUES ${tuples.join(', ')}
     ON CONFLICT (run_id, iteration) DO UPDATE SET ${set.join(', ')}
     WHERE iteration_columns.inputs_seq < EXCLUDED.inputs_seq OR iteration_columns.format <> EXCLUDED.format`,
    values,
  };
}
