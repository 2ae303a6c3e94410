import { ColumnarBatchBuilder, type ColumnarBatch } from '@creditlab/estimators';
import type pg from 'pg';
import { unpackFloat32 } from '../ingest/copy-text';

type StepRowArray = [
  number, // iteration
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
 * Reads iterations of a run straight into the estimators' columnar batches, in
 * canonical order (group, trajectory, step): one statement for the steps of all
 * the iterations asked (array-mode rows feed the builder directly, no per-step
 * objects), one for the texts not in `texts` yet (a cache the caller may keep
 * across calls: a run's texts never change).
 */
export async function loadIterationBatches(
  client: pg.Pool | pg.PoolClient,
  runId: string,
  iterations: number[],
  texts = new Map<string, string>(),
): Promise<Map<number, ColumnarBatch>> {
  const rows = await client.query<StepRowArray>({
    text: `SELECT t.iteration, g.key, t.key, t.outcome, s.state_id, s.action_id, s.reward, s.nll, s.token_logprobs, s.embedding,
                  s.value, s.next_state_id, s.next_value
           FROM steps s JOIN trajectories t ON t.id = s.trajectory_id JOIN rollout_groups g ON g.id = t.group_id
           WHERE t.run_id = $1 AND t.iteration = ANY($2::int[])
           ORDER BY t.iteration, g.ord, t.ord, s.idx`,
    values: [runId, iterations],
    rowMode: 'array',
  });
  const missing = new Set<string>();
  for (const r of rows.rows) {
    if (!texts.has(r[4])) missing.add(r[4]);
    if (!texts.has(r[5])) missing.add(r[5]);
    if (r[11] !== null && !texts.has(r[11])) missing.add(r[11]);
  }
  if (missing.size > 0) {
    const res = await client.query<[string, string]>({
      text: 'SELECT id, text FROM texts WHERE id = ANY($1::bigint[])',
      values: [[...missing]],
      rowMode: 'array',
    });
    for (const [id, text] of res.rows) texts.set(id, text);
  }
  const batches = new Map<number, ColumnarBatch>();
  let builder: ColumnarBatchBuilder | undefined;
  let iteration: number | undefined;
  let group: string | undefined;
  let trajectory: string | undefined;
  for (const r of rows.rows) {
    if (r[0] !== iteration) {
      if (builder) batches.set(iteration as number, builder.build());
      iteration = r[0];
      builder = new ColumnarBatchBuilder(2048);
      group = undefined;
    }
    const b = builder as ColumnarBatchBuilder;
    if (r[1] !== group) {
      group = r[1];
      b.beginGroup(group);
      trajectory = undefined;
    }
    if (r[2] !== trajectory) {
      trajectory = r[2];
      b.beginTrajectory(
        trajectory,
        (r[3] ?? undefined) as 'success' | 'failure' | 'truncated' | undefined,
      );
    }
    b.addStep({
      state: texts.get(r[4]) as string,
      action: texts.get(r[5]) as string,
      reward: r[6],
      nll: r[7] ?? undefined,
      tokenLogprobs: r[8] ? unpackFloat32(r[8]) : undefined,
      embedding: r[9] ? new Float32Array(new Uint8Array(r[9]).buffer) : undefined, // copied: aligned
      value: r[10] ?? undefined,
      nextState: r[11] === null ? undefined : texts.get(r[11]),
      nextValue: r[12] ?? undefined,
    });
  }
  if (builder) batches.set(iteration as number, builder.build());
  return batches;
}

/** One iteration (see loadIterationBatches); null when it holds no steps. */
export async function loadIterationBatch(
  client: pg.Pool | pg.PoolClient,
  runId: string,
  iteration: number,
): Promise<ColumnarBatch | null> {
  return (await loadIterationBatches(client, runId, [iteration])).get(iteration) ?? null;
}
