import { newEventId, rolloutEvents } from '@creditlab/client';
import { columnarBatchFromJson, estimate } from '@creditlab/estimators';
import { serverForFile } from './support/file-server';
import { sqlQuery } from './support/sql-query';
import { api, gql } from './support/test-server';
import { stepsAppended } from './support/step-by-step-events';

/**
 * Steps are stored a slice per row (migrations/20261206000000_step_slices): the steps one event
 * gives one trajectory, in rows small enough to stay inline (ROW_TARGET_BYTES), read back one per
 * step through the `steps` view. A long trajectory becomes several rows, an empty one none, and a
 * trajectory continued by later events gets a row per event.
 */
const ctx = serverForFile();

const query = (sql: string, params: unknown[]) => sqlQuery(ctx.server.databaseUrl, sql, params);

const slicesOf = (runId: string) =>
  query(
    `SELECT traj_ord, first_idx, step_count, seq::int FROM step_slices WHERE run_id = $1
     ORDER BY iteration, group_ord, traj_ord, first_idx`,
    [runId],
  );

const step = (i: number) => ({
  state: `s${i % 7}`,
  action: `a${i % 3}`,
  reward: i / 100,
  ...(i % 5 === 0 ? {} : { nll: i / 1000 }),
});

/** The rows of the run's slices, in key order, and whether any value of the table went to TOAST. */
async function rowsOf(runId: string) {
  const rows = await slicesOf(runId);
  const [toast] = await query(
    `SELECT reltoastrelid::regclass::text AS name FROM pg_class WHERE relname = 'step_slices'`,
    [],
  );
  const [toasted] = await query(`SELECT count(*)::int AS n FROM ${toast!.name as string}`, []);
  return { rows, toasted: toasted!.n };
}

/** Each row starts where the one before ended, from index 0 to `steps`. */
function expectContiguous(rows: Record<string, unknown>[], steps: number): void {
  let next = 0;
  for (const r of rows) {
    expect(r.first_idx).toBe(next);
    next += r.step_count as number;
  }
  expect(next).toBe(steps);
}

test('a 2,500-step trajectory is stored in rows that stay inline, alike from objects and columns', async () => {
  const batch = {
    groups: [
      {
        id: 'g',
        trajectories: [{ id: 'long', steps: Array.from({ length: 2500 }, (_, i) => step(i)) }],
      },
    ],
  };
  const stored: Record<string, unknown>[][] = [];
  for (const columnar of [false, true]) {
    const run = await ctx.client.createRun({ name: `long ${columnar}`, env: 'e', method: 'grpo' });
    const events = rolloutEvents(0, batch, 3000, { columnar });
    expect(events).toHaveLength(1);
    expect('columns' in events[0]!.data).toBe(columnar);
    await ctx.client.appendEvents(run.id, events);
    const { rows, toasted } = await rowsOf(run.id);
    expect(rows.length).toBeGreaterThan(10); // about 80 steps of numbers fit a row
    expectContiguous(rows, 2500);
    expect(toasted).toBe(0);
    const steps = await query(`SELECT idx, reward, nll FROM steps WHERE run_id = $1 ORDER BY idx`, [
      run.id,
    ]);
    expect(steps).toEqual(
      batch.groups[0]!.trajectories[0]!.steps.map((s, i) => ({
        idx: i,
        reward: s.reward,
        nll: s.nll ?? null,
      })),
    );
    stored.push(
      await query(
        `SELECT first_idx, step_count, state_id, action_id, reward, nll, value, embedding FROM step_slices
         WHERE run_id = $1 ORDER BY first_idx`,
        [run.id],
      ),
    );
  }
  expect(stored[1]).toEqual(stored[0]);
});

const embedding = (i: number) => Array.from({ length: 256 }, (_, k) => (i * 256 + k) / 1e4);
const vectorsOf = (rows: Record<string, unknown>[]) =>
  rows.map((r) => Array.from(new Float32Array(new Uint8Array(r.embedding as Buffer).buffer)));
const asFloat32 = (steps: { embedding: number[] }[]) =>
  steps.map((s) => Array.from(Float32Array.from(s.embedding)));

async function appendTrajectory(name: string, steps: object[], columnar: boolean) {
  const run = await ctx.client.createRun({ name, env: 'e', method: 'grpo' });
  await ctx.client.appendEvents(
    run.id,
    rolloutEvents(0, { groups: [{ id: 'g', trajectories: [{ id: 't', steps }] }] }, 100, {
      columnar,
    }),
  );
  return run;
}

test('an event whose steps all have embeddings keeps them once, as bytes in its log body; the rows say where', async () => {
  const steps = Array.from({ length: 40 }, (_, i) => ({ ...step(i), embedding: embedding(i) }));
  for (const [columnar, version] of [
    [true, 4],
    [false, 5],
  ] as const) {
    const run = await appendTrajectory(`in the body, version ${version}`, steps, columnar);
    const { rows, toasted } = await rowsOf(run.id);
    expect(rows).toHaveLength(1); // without the vectors, 40 steps of numbers fit one row
    expect(toasted).toBe(0);
    const [slice] = await query(
      `SELECT embedding, embedding_at, embedding_width, octet_length(e.body) AS body_bytes,
              substr(e.body, 1, 7) AS body_start
       FROM step_slices s JOIN events e USING (run_id, seq) WHERE s.run_id = $1`,
      [run.id],
    );
    expect(slice).toMatchObject({ embedding: null, embedding_width: 1024 });
    expect((slice!.body_start as Buffer).toString()).toBe(`{"v":${version},`);
    // The vectors end the body, as bytes: no base64 (a third larger) and no second copy in the row.
    expect(slice!.embedding_at).toBe((slice!.body_bytes as number) - 40 * 1024);
    const read = await query(`SELECT embedding FROM steps WHERE run_id = $1 ORDER BY idx`, [
      run.id,
    ]);
    expect(vectorsOf(read)).toEqual(asFloat32(steps));
    // A step read alone, past the body's first TOAST chunk.
    const [one] = await query(`SELECT embedding FROM steps WHERE run_id = $1 AND idx = 37`, [
      run.id,
    ]);
    expect(vectorsOf([one!])).toEqual(asFloat32([steps[37]!]));
  }
});

test('embeddings kept in the body read back in place across rows, trajectories (an empty one among them) and readers', async () => {
  // 8-d vectors, so that a 200-step trajectory needs several rows of numbers; distinct per step.
  const vector = (t: number, i: number) =>
    Array.from({ length: 8 }, (_, k) => t * 1000 + i + k / 8);
  const trajectory = (t: number, n: number) => ({
    id: `t${t}`,
    steps: Array.from({ length: n }, (_, i) => ({ ...step(i + t), embedding: vector(t, i) })),
  });
  const batch = {
    format: 'rollout-batch/v1',
    groups: [
      { id: 'g0', trajectories: [trajectory(0, 200), trajectory(1, 3), trajectory(2, 90)] },
      { id: 'g1', trajectories: [trajectory(3, 1), trajectory(4, 170)] },
    ],
  };
  const sent = batch.groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  for (const columnar of [true, false]) {
    const run = await ctx.client.createRun({ name: `rows ${columnar}`, env: 'e', method: 'grpo' });
    const withEmpty = { groups: [{ id: 'empty', trajectories: [{ id: 'e', steps: [] }] }] };
    await ctx.client.appendEvents(run.id, [
      // An empty trajectory first in the event: it takes no place in the body's vectors.
      ...rolloutEvents(0, { groups: [...withEmpty.groups, ...batch.groups] }, 1000, { columnar }),
    ]);
    const rows = await query(
      `SELECT step_count, embedding_at FROM step_slices WHERE run_id = $1
       ORDER BY group_ord, traj_ord, first_idx`,
      [run.id],
    );
    expect(rows.length).toBeGreaterThan(5); // the long trajectories take several rows each
    expect(rows.every((r) => r.embedding_at !== null)).toBe(true);
    const read = await query(
      `SELECT embedding FROM steps WHERE run_id = $1 ORDER BY group_ord, traj_ord, idx`,
      [run.id],
    );
    expect(vectorsOf(read)).toEqual(asFloat32(sent));
    // Through GraphQL, the field asked for by a fragment.
    const res = await gql<{ run: { trajectory: { steps: { embedding: number[] }[] } } }>(
      ctx.server,
      `query($id: ID!) { run(id: $id) { trajectory(iteration: 0, id: "t4") { steps { ...V } } } }
       fragment V on Step { embedding }`,
      { id: run.id },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data!.run.trajectory.steps.map((s) => s.embedding)).toEqual(
      asFloat32(batch.groups[1]!.trajectories[1]!.steps),
    );
    // BiPACE, the method that reads them, as the library computes it from the batch as sent.
    const bipace = await api(`${ctx.server.url}/v1/runs/${run.id}/iterations/0/advantages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'bipace' }),
    });
    expect(bipace.status).toBe(200);
    const doc = (await bipace.json()) as {
      groups: { trajectories: { advantages: number[] }[] }[];
    };
    const direct = estimate(columnarBatchFromJson(batch), 'bipace', {});
    expect(
      doc.groups
        .filter((_, g) => g > 0)
        .flatMap((g) => g.trajectories.flatMap((t) => t.advantages)),
    ).toEqual(Array.from(direct.advantages, Math.fround));
  }
});

test('when a step lacks an embedding, the rows keep them: a few 256-d steps to a row, inline', async () => {
  const steps = Array.from({ length: 40 }, (_, i) => ({ ...step(i), embedding: embedding(i) }));
  const lacking = steps.map((s, i) => (i === 5 ? step(i) : s));
  for (const columnar of [true, false]) {
    const run = await appendTrajectory(`one lacking ${columnar}`, lacking, columnar);
    const { rows, toasted } = await rowsOf(run.id);
    expect(rows.length).toBeGreaterThanOrEqual(6);
    expectContiguous(rows, 40);
    expect(toasted).toBe(0);
    const [places] = await query(
      `SELECT count(embedding_at)::int AS in_body FROM step_slices WHERE run_id = $1`,
      [run.id],
    );
    expect(places!.in_body).toBe(0);
    const read = await query(`SELECT embedding FROM steps WHERE run_id = $1 ORDER BY idx`, [
      run.id,
    ]);
    expect(read[5]!.embedding).toBeNull();
    const present = read.flatMap((r, i) => (i === 5 ? [] : [r]));
    expect(vectorsOf(present)).toEqual(asFloat32(steps.filter((_, i) => i !== 5)));
  }
});

test('an empty trajectory has no row; the events that continue it each add one, at the index they continue from', async () => {
  const run = await ctx.client.createRun({ name: 'continued', env: 'e', method: 'grpo' });
  const appendSteps = (firstStepIndex: number, from: number, count: number) =>
    stepsAppended(
      0,
      'g',
      't',
      firstStepIndex,
      Array.from({ length: count }, (_, i) => step(from + i)),
    );
  await ctx.client.appendEvents(run.id, [
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: { iteration: 0, groups: [{ id: 'g', trajectories: [{ id: 't', steps: [] }] }] },
    },
  ]);
  expect(await slicesOf(run.id)).toEqual([]);
  await ctx.client.appendEvents(run.id, [appendSteps(0, 0, 2)]);
  await ctx.client.appendEvents(run.id, [appendSteps(2, 2, 3)]);
  const slices = await slicesOf(run.id);
  expect(slices.map((s) => [s.first_idx, s.step_count])).toEqual([
    [0, 2],
    [2, 3],
  ]);
  expect(slices[1]!.seq).toBeGreaterThan(slices[0]!.seq as number);
  const steps = await query(
    `SELECT idx, seq::int, reward FROM steps WHERE run_id = $1 ORDER BY idx`,
    [run.id],
  );
  expect(steps.map((s) => [s.idx, s.seq, s.reward])).toEqual(
    [0, 1, 2, 3, 4].map((i) => [i, slices[i < 2 ? 0 : 1]!.seq, step(i).reward]),
  );
});

test('steps with large fields beyond v1 go a few to a row too, alike from objects and columns; the fields read back as sent', async () => {
  const note = (i: number) => `é${i}`.repeat(300); // about 1 kB of UTF-8 per step
  const steps = Array.from({ length: 60 }, (_, i) => ({ ...step(i), note: note(i) }));
  const stored: Record<string, unknown>[][] = [];
  for (const columnar of [false, true]) {
    const run = await ctx.client.createRun({
      name: `extras ${columnar}`,
      env: 'e',
      method: 'grpo',
    });
    const events = rolloutEvents(
      0,
      { groups: [{ id: 'g', trajectories: [{ id: 't', steps }] }] },
      100,
      {
        columnar,
      },
    );
    expect('columns' in events[0]!.data).toBe(columnar);
    await ctx.client.appendEvents(run.id, events);
    const { rows, toasted } = await rowsOf(run.id);
    expect(rows.length).toBeGreaterThanOrEqual(8);
    expectContiguous(rows, 60);
    expect(toasted).toBe(0);
    stored.push(rows);
    const read = await query(`SELECT extra FROM steps WHERE run_id = $1 ORDER BY idx`, [run.id]);
    expect(read.map((r) => r.extra)).toEqual(steps.map((s) => ({ note: s.note })));
  }
  expect(stored[1]).toEqual(stored[0]);
});
