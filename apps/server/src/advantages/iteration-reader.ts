import { ColumnarBatchBuilder, type ColumnarBatch, type Outcome } from '@creditlab/estimators';
import type pg from 'pg';

/** Where one trajectory's steps sit in its iteration's canonical order. */
export interface TrajectoryShape {
  groupId: string;
  trajectoryId: string;
  groupOrd: number;
  trajOrd: number;
  outcome: Outcome;
  length: number;
  /** Index of its first step in the iteration's canonical order. */
  offset: number;
}

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
  options: { steps: boolean; texts?: Map<string, string> } = { steps: true },
): Promise<Map<number, IterationSnapshot>> {
  return inSnapshot(db, async (client) => {
    const positions = await client.query<{ iteration: number; inputs_seq: string | null }>(
      'SELECT iteration, inputs_seq FROM iterations WHERE run_id = $1 AND iteration = ANY($2::int[])',
      [runId, iterations],
    );
    const out = new Map<number, IterationSnapshot>();
    for (const p of positions.rows) {
      if (p.inputs_seq === null) continue; // metrics only: no rollouts
      out.set(p.iteration, {
        iteration: p.iteration,
        inputsSeq: Number(p.inputs_seq),
        stepCount: 0,
        shape: [],
        batch: null,
      });
    }
    await readShapes(client, runId, out);
    if (options.steps) await readBatches(client, runId, out, options.texts ?? new Map());
    return out;
  });
}

/** One iteration (see readIterations); undefined when it holds no rollouts. */
export async function readIteration(
  db: Client,
  runId: string,
  iteration: number,
  options: { steps: boolean; texts?: Map<string, string> } = { steps: true },
): Promise<IterationSnapshot | undefined> {
  return (await readIterations(db, runId, [iteration], options)).get(iteration);
}

/** Runs `work` in one repeatable-read, read-only transaction (one snapshot for every statement). */
async function inSnapshot<T>(db: Client, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const pooled = 'release' in db ? undefined : await (db as pg.Pool).connect();
  const client = pooled ?? (db as pg.PoolClient);
  if (!pooled) return work(client); // the caller's transaction is the snapshot
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
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

async function readShapes(
  client: pg.PoolClient,
  runId: string,
  out: Map<number, IterationSnapshot>,
): Promise<void> {
  if (out.size === 0) return;
  const res = await client.query<{
    iteration: number;
    group_key: string;
    key: string;
    group_ord: number;
    ord: number;
    outcome: Outcome;
    step_count: number;
  }>(
    `SELECT t.iteration, g.key AS group_key, t.key, t.group_ord, t.ord, t.outcome, t.step_count
     FROM trajectories t
     JOIN rollout_groups g ON g.run_id = t.run_id AND g.iteration = t.iteration AND g.ord = t.group_ord
     WHERE t.run_id = $1 AND t.iteration = ANY($2::int[])
     ORDER BY t.iteration, t.group_ord, t.ord`,
    [runId, [...out.keys()]],
  );
  for (const r of res.rows) {
    const it = out.get(r.iteration) as IterationSnapshot;
    it.shape.push({
      groupId: r.group_key,
      trajectoryId: r.key,
      groupOrd: r.group_ord,
      trajOrd: r.ord,
      outcome: r.outcome,
      length: r.step_count,
      offset: it.stepCount,
    });
    it.stepCount += r.step_count;
  }
}

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

/** Reads the steps (array-mode rows, straight into the builder) and builds each iteration's batch. */
async function readBatches(
  client: pg.PoolClient,
  runId: string,
  out: Map<number, IterationSnapshot>,
  texts: Map<string, string>,
): Promise<void> {
  if (out.size === 0) return;
  const rows = await client.query<StepRowArray>({
    text: `SELECT iteration, state_id, action_id, reward, nll, token_logprobs, embedding, value,
                  next_state_id, next_value
           FROM steps WHERE run_id = $1 AND iteration = ANY($2::int[])
           ORDER BY iteration, group_ord, traj_ord, idx`,
    values: [runId, [...out.keys()]],
    rowMode: 'array',
  });
  await resolveTexts(client, runId, rows.rows, texts);
  let at = 0;
  for (const it of [...out.values()].sort((a, b) => a.iteration - b.iteration)) {
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
    it.batch = it.stepCount > 0 ? builder.build() : null;
  }
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

/** Copies into an aligned Float32Array (pg's Buffers may sit at any byte offset). */
const float32 = (buf: Buffer) => new Float32Array(new Uint8Array(buf).buffer);

/** Loads the texts the rows name that `texts` does not hold yet. */
async function resolveTexts(
  client: pg.PoolClient,
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
  const res = await client.query<[string, string]>({
    text: 'SELECT id, text FROM texts WHERE run_id = $1 AND id = ANY($2::bigint[])',
    values: [runId, [...missing]],
    rowMode: 'array',
  });
  for (const [id, text] of res.rows) texts.set(id, text);
}
