import type { DiagnosticKind } from '@creditlab/estimators';
import type pg from 'pg';
import { isUuid } from '../database/uuid';
import {
  decodeDiagnostics,
  unpackFloat32Array,
  type Diagnostics,
  type StoredDiagnostics,
} from './advantage-codec';

/** One iteration of a set as computed from the iteration at log position `inputsSeq`. */
export interface StoredIteration {
  iteration: number;
  inputsSeq: number;
  stepCount: number;
  advantages: Buffer;
  /** null: not kept (a recompute job's version); computed and filled in when first asked for. */
  diagnostics: StoredDiagnostics | null;
  summary: Record<string, unknown>;
  computeMs: number;
}

export interface DecodedIteration {
  iteration: number;
  inputsSeq: number;
  stepCount: number;
  advantages: Float32Array;
  diagnostics: Diagnostics;
  summary: Record<string, unknown>;
  computeMs: number;
}

/** A stored version's row, as `freshIterationSql` selects it. */
export interface FreshRow {
  set_id: string;
  inputs_seq: string;
  step_count: number;
  advantages: Buffer;
  names: string[] | null;
  kinds: DiagnosticKind[] | null;
  diagnostics: Buffer | null;
  summary: Record<string, unknown>;
  compute_ms: number;
}

/**
 * The versions of (set, iteration), for each of `setIds`, computed from the iteration as it stands
 * now — those whose log position equals the iteration's current `inputs_seq` — as one statement of
 * literal SQL, so that it can run in the reader's first round trip, in the same snapshot as the
 * shape (a set without a row: never computed, or computed before later steps or outcomes arrived,
 * i.e. stale).
 */
export function freshIterationSql(
  runId: string,
  setIds: string[],
  iteration: number,
  withDiagnostics: boolean,
): string {
  // Literal SQL: a run id, set ids (bigint identities) and an iteration, checked as such.
  if (
    !isUuid(runId) ||
    setIds.length === 0 ||
    !setIds.every((id) => /^\d{1,19}$/.test(id)) ||
    !Number.isInteger(iteration)
  )
    throw new Error(`not set iterations: ${runId} ${setIds.join(',')} ${iteration}`);
  return `SELECT a.set_id::text AS set_id, a.inputs_seq, a.step_count, a.advantages,
            a.diagnostic_names AS names, a.diagnostic_kinds AS kinds,
            ${withDiagnostics ? 'a.diagnostics' : `''::bytea AS diagnostics`}, a.summary, a.compute_ms
     FROM iterations it
     JOIN advantage_set_iterations a
       ON a.run_id = it.run_id AND a.set_id IN (${setIds.join(', ')}) AND a.iteration = it.iteration
          AND a.inputs_seq = it.inputs_seq
     WHERE it.run_id = '${runId}' AND it.iteration = ${iteration}`;
}

/**
 * A row of `freshIterationSql`, decoded; undefined when diagnostics are wanted and the version was
 * stored without them (a recompute job's), so that the caller computes them.
 */
export function decodeFresh(
  row: FreshRow,
  iteration: number,
  withDiagnostics: boolean,
): DecodedIteration | undefined {
  let diagnostics: Diagnostics = {};
  if (withDiagnostics) {
    if (row.names === null || row.kinds === null || row.diagnostics === null) return undefined;
    diagnostics = decodeDiagnostics(
      { names: row.names, kinds: row.kinds, values: row.diagnostics },
      row.step_count,
    );
  }
  return {
    iteration,
    inputsSeq: Number(row.inputs_seq),
    stepCount: row.step_count,
    advantages: unpackFloat32Array(row.advantages),
    diagnostics,
    summary: row.summary,
    computeMs: row.compute_ms,
  };
}

/** Which of `iterations` have a fresh version in the set (see freshIteration). */
export async function freshIterations(
  pool: pg.Pool,
  runId: string,
  setId: string,
  iterations?: number[],
): Promise<number[]> {
  const res = await pool.query<{ iteration: number }>(
    `SELECT a.iteration FROM iterations it
     JOIN advantage_set_iterations a
       ON a.run_id = it.run_id AND a.set_id = $2 AND a.iteration = it.iteration AND a.inputs_seq = it.inputs_seq
     WHERE it.run_id = $1 AND ($3::int[] IS NULL OR it.iteration = ANY($3::int[]))
     ORDER BY a.iteration`,
    [runId, setId, iterations ?? null],
  );
  return res.rows.map((r) => r.iteration);
}

/**
 * Stores computed versions, one statement for any number of them; a version stored already stays,
 * except that one stored without diagnostics gets them when a version with them comes.
 * One VALUES row per version rather than unnest() over arrays: node-postgres sends a Buffer
 * parameter as binary, but an array of Buffers as a hex text literal (twice the bytes, parsed
 * again by the server), which made storing a 1M-step set cost more than estimating it.
 */
export async function insertIterations(
  pool: pg.Pool | pg.ClientBase,
  runId: string,
  setId: string,
  rows: StoredIteration[],
): Promise<void> {
  if (rows.length === 0) return;
  const values: unknown[] = [runId, setId];
  const tuples = rows.map((r) => {
    const at = values.length;
    values.push(
      r.iteration,
      r.inputsSeq,
      r.stepCount,
      r.advantages,
      r.diagnostics?.names ?? null,
      r.diagnostics?.kinds ?? null,
      r.diagnostics?.values ?? null,
      JSON.stringify(r.summary),
      r.computeMs,
    );
    const p = (k: number) => `$${at + k}`;
    return `($1, $2, ${p(1)}::int, ${p(2)}::bigint, ${p(3)}::int, ${p(4)}::bytea, ${p(5)}::text[], ${p(6)}::text[], ${p(7)}::bytea, ${p(8)}::jsonb, ${p(9)}::real)`;
  });
  await pool.query(
    `INSERT INTO advantage_set_iterations
       (run_id, set_id, iteration, inputs_seq, step_count, advantages, diagnostic_names, diagnostic_kinds, diagnostics,
        summary, compute_ms)
     VALUES ${tuples.join(', ')}
     ON CONFLICT (run_id, set_id, iteration, inputs_seq) DO UPDATE
       SET diagnostic_names = EXCLUDED.diagnostic_names, diagnostic_kinds = EXCLUDED.diagnostic_kinds,
           diagnostics = EXCLUDED.diagnostics
       WHERE advantage_set_iterations.diagnostics IS NULL AND EXCLUDED.diagnostics IS NOT NULL`,
    values,
  );
}

/**
 * insertIterations for a recompute job, committed without waiting for its WAL to reach the disk
 * (synchronous_commit off for this transaction only). A job stores megabytes per chunk, and waiting
 * for each flush made storing, not estimating, what a job of a fast method waited on. Safe because
 * the rows are derived: a crash can lose only the last fraction of a second of them, the job's
 * progress is recorded afterwards by an ordinary commit (whose flush covers every earlier commit, so
 * progress never counts rows that were lost), and a missing version is computed again when read.
 */
export async function insertRecomputed(
  pool: pg.Pool,
  runId: string,
  setId: string,
  rows: StoredIteration[],
): Promise<void> {
  if (rows.length === 0) return;
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('BEGIN; SET LOCAL synchronous_commit TO off');
    await insertIterations(client, runId, setId, rows);
    await client.query('COMMIT');
  } catch (e) {
    failure = e as Error;
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release(failure); // a connection that failed is not reused
  }
}

export function decodeStored(row: StoredIteration): DecodedIteration {
  return {
    iteration: row.iteration,
    inputsSeq: row.inputsSeq,
    stepCount: row.stepCount,
    advantages: unpackFloat32Array(row.advantages),
    diagnostics: row.diagnostics ? decodeDiagnostics(row.diagnostics, row.stepCount) : {},
    summary: row.summary,
    computeMs: row.computeMs,
  };
}
