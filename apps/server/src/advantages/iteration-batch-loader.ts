import { ColumnarBatchBuilder, type ColumnarBatch } from '@creditlab/estimators';
import type pg from 'pg';
import { unpackFloat32 } from '../ingest/copy-text';

type StepRowArray = [
  string, // group key
  string, // trajectory key
  string | null, // outcome
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
 * Reads one iteration of a run straight into the estimators' columnar batch,
 * in canonical order (group, trajectory, step), with two statements (steps,
 * then the distinct texts) and no per-step ORM objects: array-mode rows feed the
 * builder directly.
 */
export async function loadIterationBatch(
  client: pg.Pool | pg.PoolClient,
  runId: string,
  iteration: number,
): Promise<ColumnarBatch | null> {
  const rows = await client.query<StepRowArray>({
    text: `SELECT g.key, t.key, t.outcome, s.state_id, s.action_id, s.reward, s.nll, s.token_logprobs, s.embedding,
                  s.value, s.next_state_id, s.next_value
           FROM steps s JOIN trajectories t ON t.id = s.trajectory_id JOIN rollout_groups g ON g.id = t.group_id
           WHERE t.run_id = $1 AND t.iteration = $2
           ORDER BY g.ord, t.ord, s.idx`,
    values: [runId, iteration],
    rowMode: 'array',
  });
  if (rows.rows.length === 0) return null;
  const ids = new Set<string>();
  for (const r of rows.rows) {
    ids.add(r[3]);
    ids.add(r[4]);
    if (r[10] !== null) ids.add(r[10]);
  }
  const texts = await client.query<[string, string]>({
    text: 'SELECT id, text FROM texts WHERE id = ANY($1::bigint[])',
    values: [[...ids]],
    rowMode: 'array',
  });
  const text = new Map(texts.rows);
  const builder = new ColumnarBatchBuilder(rows.rows.length);
  let group: string | undefined;
  let trajectory: string | undefined;
  for (const r of rows.rows) {
    if (r[0] !== group) {
      group = r[0];
      builder.beginGroup(group);
      trajectory = undefined;
    }
    if (r[1] !== trajectory) {
      trajectory = r[1];
      builder.beginTrajectory(
        trajectory,
        (r[2] ?? undefined) as 'success' | 'failure' | 'truncated' | undefined,
      );
    }
    builder.addStep({
      state: text.get(r[3]) as string,
      action: text.get(r[4]) as string,
      reward: r[5],
      nll: r[6] ?? undefined,
      tokenLogprobs: r[7] ? unpackFloat32(r[7]) : undefined,
      embedding: r[8] ? new Float32Array(new Uint8Array(r[8]).buffer) : undefined, // copied: aligned
      value: r[9] ?? undefined,
      nextState: r[10] === null ? undefined : text.get(r[10]),
      nextValue: r[11] ?? undefined,
    });
  }
  return builder.build();
}
