import { ColumnarBatchBuilder, type ColumnarBatch } from '@creditlab/estimators';
import type pg from 'pg';
import { readIterations } from '../../apps/server/src/advantages/iteration-reader';

type StepRowArray = [
  number, // iteration
  string, // state id
  string, // action id
  number, // reward
  number | null, // nll
  Buffer | null, // token log-probs
  Buffer | null, // embedding
  number | null, // value
  string | null, // next state id
  number | null, // next value
];

/**
 * The server's iteration reader as it was before binary COPY (kept for the recompute benchmark's
 * before-and-after): every step column as text-protocol rows, the texts resolved through a map,
 * and each step handed to ColumnarBatchBuilder as an object. The shape comes from today's reader
 * (its query is unchanged).
 */
export async function readBatchesByRows(
  pool: pg.Pool,
  runId: string,
  iterations: number[],
  texts: Map<string, string>,
): Promise<ColumnarBatch[]> {
  const shapes = await readIterations(pool, runId, iterations, { steps: false });
  const rows = await pool.query<StepRowArray>({
    text: `SELECT iteration, state_id, action_id, reward, nll, token_logprobs, embedding, value,
                  next_state_id, next_value
           FROM steps WHERE run_id = $1 AND iteration = ANY($2::int[])
           ORDER BY iteration, group_ord, traj_ord, idx`,
    values: [runId, [...shapes.keys()]],
    rowMode: 'array',
  });
  await resolveTexts(pool, runId, rows.rows, texts);
  let at = 0;
  const batches: ColumnarBatch[] = [];
  for (const it of [...shapes.values()].sort((a, b) => a.iteration - b.iteration)) {
    const builder = new ColumnarBatchBuilder(Math.max(16, it.stepCount));
    let group: number | undefined;
    for (const t of it.shape) {
      if (t.length === 0) continue;
      if (t.groupOrd !== group) {
        group = t.groupOrd;
        builder.beginGroup(t.groupId);
      }
      builder.beginTrajectory(t.trajectoryId, t.outcome);
      for (let j = 0; j < t.length; j++) addStep(builder, rows.rows[at++] as StepRowArray, texts);
    }
    if (it.stepCount > 0) batches.push(builder.build());
  }
  return batches;
}

function addStep(b: ColumnarBatchBuilder, r: StepRowArray, texts: Map<string, string>): void {
  b.addStep({
    state: texts.get(r[1]) as string,
    action: texts.get(r[2]) as string,
    reward: r[3],
    nll: r[4] ?? undefined,
    tokenLogprobs: r[5] ? Array.from(float32(r[5])) : undefined,
    embedding: r[6] ? float32(r[6]) : undefined,
    value: r[7] ?? undefined,
    nextState: r[8] === null ? undefined : texts.get(r[8]),
    nextValue: r[9] ?? undefined,
  });
}

const float32 = (buf: Buffer) => new Float32Array(new Uint8Array(buf).buffer);

async function resolveTexts(
  pool: pg.Pool,
  runId: string,
  rows: StepRowArray[],
  texts: Map<string, string>,
): Promise<void> {
  const missing = new Set<string>();
  for (const r of rows) {
    if (!texts.has(r[1])) missing.add(r[1]);
    if (!texts.has(r[2])) missing.add(r[2]);
    if (r[8] !== null && !texts.has(r[8])) missing.add(r[8]);
  }
  if (missing.size === 0) return;
  const res = await pool.query<[string, string]>({
    text: 'SELECT id, text FROM texts WHERE run_id = $1 AND id = ANY($2::bigint[])',
    values: [runId, [...missing]],
    rowMode: 'array',
  });
  for (const [id, text] of res.rows) texts.set(id, text);
}
