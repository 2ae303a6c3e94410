import type pg from 'pg';
import { stepText } from '../rollouts/step-text-sql';

/** One exported column: its name, its Parquet type, and where a row's value comes from. */
export interface ExportColumn {
  name: string;
  type: 'STRING' | 'INT32' | 'INT64' | 'DOUBLE' | 'FLOAT' | 'JSON';
}

/** The rows of one iteration, column by column (what both writers take). */
export type ColumnBatch = Map<string, unknown[]>;

export const STEP_COLUMNS: ExportColumn[] = [
  { name: 'run_id', type: 'STRING' },
  { name: 'iteration', type: 'INT32' },
  { name: 'group_id', type: 'STRING' },
  { name: 'trajectory_id', type: 'STRING' },
  { name: 'step_index', type: 'INT32' },
  { name: 'seq', type: 'INT64' },
  { name: 'state', type: 'STRING' },
  { name: 'action', type: 'STRING' },
  { name: 'reward', type: 'DOUBLE' },
  { name: 'nll', type: 'DOUBLE' },
  { name: 'value', type: 'DOUBLE' },
  { name: 'next_state', type: 'STRING' },
  { name: 'next_value', type: 'DOUBLE' },
  { name: 'outcome', type: 'STRING' },
  { name: 'return', type: 'DOUBLE' },
  { name: 'extra', type: 'JSON' },
];
/** Asked for by name (they are large): JSON arrays of float32 values. */
export const OPTIONAL_COLUMNS: Record<string, ExportColumn> = {
  embedding: { name: 'embedding', type: 'JSON' },
  tokenLogprobs: { name: 'token_logprobs', type: 'JSON' },
};

interface StepRow {
  group_id: string;
  trajectory_id: string;
  idx: number;
  seq: string;
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  value: number | null;
  next_state: string | null;
  next_value: number | null;
  outcome: string;
  return: number;
  extra: unknown;
  embedding: Buffer | null;
  token_logprobs: Buffer | null;
}

/**
 * One iteration's steps in canonical order as columns, with one advantage column per method:
 * exactly the steps of the version the advantages were computed from (steps that arrived later
 * carry a larger seq and wait for the next export).
 */
export async function iterationColumns(
  db: Pick<pg.ClientBase, 'query'>,
  runId: string,
  first: { iteration: number; inputsSeq: number; stepCount: number },
  advantages: { label: string; values: Float32Array }[],
  include: string[],
): Promise<ColumnBatch> {
  const res = await db.query<StepRow>(
    `SELECT g.key AS group_id, t.key AS trajectory_id, s.idx, s.seq,
            ${stepText('state_id')} AS state, ${stepText('action_id')} AS action,
            s.reward, s.nll, s.value, ${stepText('next_state_id')} AS next_state, s.next_value,
            t.outcome, t.return, s.extra,
            ${include.includes('embedding') ? 's.embedding' : 'NULL::bytea AS embedding'},
            ${include.includes('tokenLogprobs') ? 's.token_logprobs' : 'NULL::bytea AS token_logprobs'}
     FROM steps s
     JOIN trajectories t ON (t.run_id, t.iteration, t.group_ord, t.ord) = (s.run_id, s.iteration, s.group_ord, s.traj_ord)
     JOIN rollout_groups g ON (g.run_id, g.iteration, g.ord) = (s.run_id, s.iteration, s.group_ord)
     WHERE s.run_id = $1 AND s.iteration = $2 AND s.seq <= $3
     ORDER BY s.group_ord, s.traj_ord, s.idx`,
    [runId, first.iteration, first.inputsSeq],
  );
  const rows = res.rows;
  if (rows.length !== first.stepCount)
    throw new Error(
      `iteration ${first.iteration}: ${rows.length} steps read, ${first.stepCount} expected`,
    );
  const col = (f: (r: StepRow) => unknown) => rows.map(f);
  const batch: ColumnBatch = new Map<string, unknown[]>([
    ['run_id', col(() => runId)],
    ['iteration', col(() => first.iteration)],
    ['group_id', col((r) => r.group_id)],
    ['trajectory_id', col((r) => r.trajectory_id)],
    ['step_index', col((r) => r.idx)],
    ['seq', col((r) => BigInt(r.seq))],
    ['state', col((r) => r.state)],
    ['action', col((r) => r.action)],
    ['reward', col((r) => r.reward)],
    ['nll', col((r) => r.nll)],
    ['value', col((r) => r.value)],
    ['next_state', col((r) => r.next_state)],
    ['next_value', col((r) => r.next_value)],
    ['outcome', col((r) => r.outcome)],
    ['return', col((r) => r.return)],
    ['extra', col((r) => (r.extra === null ? null : JSON.stringify(r.extra)))],
  ]);
  if (include.includes('embedding'))
    batch.set(
      'embedding',
      col((r) => vector(r.embedding)),
    );
  if (include.includes('tokenLogprobs'))
    batch.set(
      'token_logprobs',
      col((r) => vector(r.token_logprobs)),
    );
  for (const { label, values } of advantages) batch.set(`adv:${label}`, Array.from(values));
  return batch;
}

const vector = (buf: Buffer | null) =>
  buf === null ? null : JSON.stringify(Array.from(new Float32Array(new Uint8Array(buf).buffer)));
