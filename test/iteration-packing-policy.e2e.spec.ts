import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import pg from 'pg';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { packRun } from '../apps/server/src/advantages/iteration-packing';
import { stepByStepEvents } from './support/step-by-step-events';
import { syntheticRun } from './support/synthetic-run';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * When iterations are packed for recompute (CREDITLAB_PACK_ITERATIONS): by default (`on-append`) by
 * the request that writes an iteration whole, in the appending transaction, and the others as they
 * complete; with `on-complete` all of them as they complete, in the background of ingest; with
 * `on-read` only once a recompute job has read them from the step slices, so that ingest pays
 * nothing for them.
 */
type Server = ServerProcess & { databaseUrl: string };

const packedIterations = async (server: Server, runId: string): Promise<number[]> => {
  const pool = new pg.Pool({ connectionString: server.databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ iteration: number }>(
      'SELECT iteration FROM iteration_columns WHERE run_id = $1 ORDER BY iteration',
      [runId],
    );
    return rows.map((r) => r.iteration);
  } finally {
    await pool.end();
  }
};

/** Polls until the run's packed iterations are `expected`, or `ms` pass; returns the last answer. */
async function packedWithin(server: Server, runId: string, expected: number[], ms: number) {
  const until = Date.now() + ms;
  let packed = await packedIterations(server, runId);
  while (JSON.stringify(packed) !== JSON.stringify(expected) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    packed = await packedIterations(server, runId);
  }
  return packed;
}

async function recomputeGrpo(server: Server, runId: string): Promise<void> {
  const asked = await gql<{ recompute: { id: string } }>(
    server,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "grpo" }) { id } }',
    { r: runId },
  );
  let status = '';
  while (status !== 'COMPLETED') {
    await new Promise((r) => setTimeout(r, 100));
    const res = await gql<{ job: { status: string } }>(
      server,
      'query($id: ID!) { job(id: $id) { status } }',
      {
        id: asked.data!.recompute.id,
      },
    );
    status = res.data!.job.status;
    expect(['QUEUED', 'RUNNING', 'COMPLETED']).toContain(status);
  }
}

/** The run's packed rows, every column, by iteration. */
async function packedRows(pool: pg.Pool, runId: string): Promise<Record<string, unknown>[]> {
  const { rows } = await pool.query(
    'SELECT * FROM iteration_columns WHERE run_id = $1 ORDER BY iteration',
    [runId],
  );
  return rows;
}

/** Each iteration's current log position and whether its packed row is at it. */
async function positions(pool: pg.Pool, runId: string) {
  const { rows } = await pool.query<{ iteration: number; inputs_seq: string; packed_at: string }>(
    `SELECT it.iteration, it.inputs_seq, c.inputs_seq AS packed_at FROM iterations it
     LEFT JOIN iteration_columns c USING (run_id, iteration)
     WHERE it.run_id = $1 ORDER BY it.iteration`,
    [runId],
  );
  return rows.map((r) => ({
    iteration: r.iteration,
    fresh: r.packed_at !== null && r.packed_at === r.inputs_seq,
    packed: r.packed_at !== null,
  }));
}

/** The run finished and its packed rows dropped, the packer writes them again the same, byte for byte. */
async function expectPackerWritesTheSame(pool: pg.Pool, client: CreditlabClient, runId: string) {
  const packed = await packedRows(pool, runId);
  await pool.query('DELETE FROM iteration_columns WHERE run_id = $1', [runId]);
  await client.appendEvents(runId, [
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  await packRun(pool, runId);
  expect(await packedRows(pool, runId)).toEqual(packed);
}

describe('on-append (the default)', () => {
  let server: Server;
  let pool: pg.Pool;
  let client: CreditlabClient;
  beforeAll(async () => {
    server = await startTestServer();
    pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
    client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY, batchSize: 100_000 });
  });
  afterAll(async () => {
    await pool.end();
    await server.stop();
  });

  test('each iteration a request writes whole is packed by that request, byte for byte what the packer writes', async () => {
    const { id } = await client.createRun({ name: 'in-hand', env: 'synthetic', method: 'gigpo' });
    const small = { groups: 3, groupSize: 4, maxSteps: 12, statesPerGroup: 5, embeddingDim: 64 };
    const full = { ...small, withOptionalFields: true };
    // One request per iteration, in every way a request can carry one: objects, columns, events of
    // a few steps (trajectories continued across events), slices longer than one row (64-d vectors),
    // a step per event out of canonical order with the outcomes sent after.
    const requests: ClientEvent[][] = [
      rolloutEvents(0, syntheticBatchJson(small, 1), 2000, { columnar: false }),
      rolloutEvents(1, syntheticBatchJson(full, 2), 2000, { columnar: true }),
      rolloutEvents(2, syntheticBatchJson(full, 3), 5, { columnar: false }),
      rolloutEvents(3, syntheticBatchJson({ ...full, maxSteps: 150 }, 4), 2000, {
        columnar: false,
      }),
      stepByStepEvents(4, syntheticBatchJson(full, 5)),
      rolloutEvents(5, syntheticBatchJson(small, 6), 7, { columnar: true }),
    ];
    for (const [i, events] of requests.entries()) {
      const sent = await client.appendEvents(id, events);
      expect(sent.requests).toBe(1);
      // Packed when the request returns, the open iteration too: no background pass did it.
      expect((await positions(pool, id))[i]).toEqual({ iteration: i, fresh: true, packed: true });
    }
    const inHand = await packedRows(pool, id);
    expect(inHand.map((r) => r.iteration)).toEqual([0, 1, 2, 3, 4, 5]);

    // The packer, reading the same iterations back from the step slices, writes the same rows.
    await client.appendEvents(id, [
      { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
    ]);
    await pool.query('DELETE FROM iteration_columns WHERE run_id = $1', [id]);
    await packRun(pool, id);
    expect(await packedRows(pool, id)).toEqual(inHand);
  });

  test('a request of several iterations over several writes, and one of thousands of iterations, pack them all', async () => {
    const { id } = await client.createRun({ name: 'many', env: 'synthetic', method: 'gigpo' });
    // Iteration 0 exists before its steps, with no trajectory: its steps are still all the next request's.
    await client.appendEvents(id, [
      { id: newEventId(), type: 'metrics.logged', data: { iteration: 0, metrics: { loss: 1 } } },
    ]);
    // About 1,000 steps each; a trajectory without steps.
    const shape = { groups: 8, groupSize: 8, maxSteps: 30, statesPerGroup: 6 };
    const batches = [0, 1, 2].map((i) => syntheticBatchJson(shape, 20 + i));
    batches[1]!.groups[0]!.trajectories.push({ id: 'no-steps', steps: [] });
    const sent = await client.appendEvents(
      id,
      batches.flatMap((b, i) => rolloutEvents(i, b)),
    );
    expect(sent.requests).toBe(1);
    expect(await positions(pool, id)).toEqual(
      [0, 1, 2].map((iteration) => ({ iteration, fresh: true, packed: true })),
    );
    await expectPackerWritesTheSame(pool, client, id);

    // More packed rows than one statement's parameters can carry (65,535 at ten a row).
    const { id: spool } = await client.createRun({
      name: 'spool',
      env: 'synthetic',
      method: 'grpo',
    });
    const tiny = {
      groups: [
        { id: 'g', trajectories: [{ id: 't', steps: [{ state: 's', action: 'a', reward: 1 }] }] },
      ],
    };
    const iterations = 6600;
    const events = Array.from({ length: iterations }, (_, i) => rolloutEvents(i, tiny)).flat();
    expect((await client.appendEvents(spool, events)).requests).toBe(1);
    const packed = await positions(pool, spool);
    expect(packed.filter((p) => p.fresh)).toHaveLength(iterations);
  });

  test('a request of several chunks packs each iteration once past it; one it changes after that is packed again', async () => {
    const { id } = await client.createRun({ name: 'chunks', env: 'synthetic', method: 'gigpo' });
    // Four iterations of 6,000 steps: the request is projected in two chunks (16,000 steps each), and
    // iterations 0 and 1 are packed with the first, while the second is still to come.
    const shape = { groups: 100, groupSize: 8, maxSteps: 40, statesPerGroup: 10 };
    const batches = [0, 1, 2, 3].map((i) =>
      syntheticBatchJson({ ...shape, maxTotalSteps: 6000 }, 30 + i),
    );
    const steps = batches
      .flatMap((b) => b.groups.flatMap((g) => g.trajectories))
      .reduce((n, t) => n + t.steps.length, 0);
    expect(steps).toBeGreaterThan(16_000);
    const late = batches[0]!.groups[0]!;
    const events = [
      ...batches.flatMap((b, i) => rolloutEvents(i, b, 2000, { columnar: true })),
      // Iteration 0 changed at the request's end, long after it was packed: a new outcome.
      {
        id: newEventId(),
        type: 'trajectory.finished',
        data: {
          iteration: 0,
          groupId: late.id,
          trajectoryId: late.trajectories[0]!.id,
          outcome: 'failure',
        },
      } as ClientEvent,
    ];
    expect((await client.appendEvents(id, events)).requests).toBe(1);
    expect((await positions(pool, id)).slice(1)).toEqual(
      [1, 2, 3].map((iteration) => ({ iteration, fresh: true, packed: true })),
    );
    // Iteration 0's row from the first chunk is stale (never served); the background pass packs it again.
    const until = Date.now() + 60_000;
    let now = await positions(pool, id);
    while (!now[0]!.fresh && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      now = await positions(pool, id);
    }
    expect(now[0]).toEqual({ iteration: 0, fresh: true, packed: true });
    // Whenever each was packed, the rows are the packer's, byte for byte.
    await expectPackerWritesTheSame(pool, client, id);
  });

  test('an iteration appended to by a later request is not packed by it, and is packed again once complete', async () => {
    const { id } = await client.createRun({ name: 'split', env: 'synthetic', method: 'gigpo' });
    const shape = { groups: 4, groupSize: 4, maxSteps: 10, statesPerGroup: 5 };
    const batch = syntheticBatchJson(shape, 7);
    const firstHalf = { groups: batch.groups.slice(0, 2) };
    const secondHalf = { groups: batch.groups.slice(2) };
    await client.appendEvents(id, rolloutEvents(0, firstHalf));
    expect(await positions(pool, id)).toEqual([{ iteration: 0, fresh: true, packed: true }]);
    // The second request holds only part of iteration 0: its row stays at the first position (stale,
    // so never served) rather than being stamped with the new one.
    await client.appendEvents(id, rolloutEvents(0, secondHalf));
    expect(await positions(pool, id)).toEqual([{ iteration: 0, fresh: false, packed: true }]);
    // Iteration 1 completes iteration 0: the background packer packs it again, at its new position.
    await client.appendEvents(id, rolloutEvents(1, syntheticBatchJson(shape, 8)));
    const until = Date.now() + 60_000;
    let now = await positions(pool, id);
    while (!now.every((p) => p.fresh) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      now = await positions(pool, id);
    }
    expect(now).toEqual([
      { iteration: 0, fresh: true, packed: true },
      { iteration: 1, fresh: true, packed: true },
    ]);
  });
});

describe('on-complete', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ CREDITLAB_PACK_ITERATIONS: 'on-complete' });
  });
  afterAll(() => server.stop());

  test('the complete iterations are packed as they are ingested, with no job', async () => {
    const { id } = await syntheticRun(server.url, 4); // iteration 3 is still open
    expect(await packedWithin(server, id, [0, 1, 2], 60_000)).toEqual([0, 1, 2]);
  });
});

describe('on-read', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ CREDITLAB_PACK_ITERATIONS: 'on-read' });
  });
  afterAll(() => server.stop());

  test('ingest packs nothing; the first recompute packs what it read', async () => {
    const { id } = await syntheticRun(server.url, 4);
    // The default packs within a fraction of a second: seconds of nothing mean nothing was started.
    expect(await packedWithin(server, id, [0, 1, 2], 3_000)).toEqual([]);
    await recomputeGrpo(server, id);
    expect(await packedWithin(server, id, [0, 1, 2], 60_000)).toEqual([0, 1, 2]);
  });
});
