import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { columnarBatchFromJson, estimate, type RolloutBatch } from '@creditlab/estimators';
import type { ClientEvent } from '@creditlab/events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * Stored advantages never go stale: after late steps, a late trajectory, a late group or an
 * outcome change, every read path answers exactly what the estimator gives on the iteration as it
 * now stands (the library on the batch as it now is), never the numbers stored before.
 */
const example = JSON.parse(
  readFileSync(path.resolve(__dirname, '../examples/get-the-key.json'), 'utf8'),
) as RolloutBatch;
const lateStep = (reward: number) => ({
  state: 'You are in room B. A key lies on the table.',
  action: 'open the door',
  reward,
  nll: 0.5,
  embedding: [0.2, 0.9, 0.1],
  value: 0.4,
});

let server: ServerProcess & { databaseUrl: string };
let client: CreditlabClient;
beforeAll(async () => {
  server = await startTestServer();
  client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
});
afterAll(() => server.stop());

const METHODS: [string, Record<string, unknown>][] = [
  ['grpo', {}],
  ['gigpo', { gamma: 0.9 }],
  ['gaca', {}],
  ['gagpo', {}],
  ['ppo-gae', { bootstrapTruncated: true }],
];

/** The library on the batch as it now stands, in canonical order (float32, as stored). */
const library = (batch: RolloutBatch, method: string, params: Record<string, unknown>) =>
  Array.from(estimate(columnarBatchFromJson(batch), method, params).advantages, Math.fround);

const flat = (doc: unknown) =>
  (doc as { groups: { trajectories: { advantages: number[] }[] }[] }).groups.flatMap((g) =>
    g.trajectories.flatMap((t) => t.advantages),
  );

/** Every read path's answer for one method, in canonical order. */
async function everyPath(runId: string, method: string, params: Record<string, unknown>) {
  const post = (accept: string) =>
    api(`${server.url}/v1/runs/${runId}/iterations/0/advantages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept },
      body: JSON.stringify({ method, params, eventId: newEventId() }),
    });
  const query = `method=${method}&params=${encodeURIComponent(JSON.stringify(params))}`;
  const get = (accept: string) =>
    api(`${server.url}/v1/runs/${runId}/iterations/0/advantages?${query}`, { headers: { accept } });
  const octet = async (res: Response) => {
    expect(res.status).toBe(200);
    const values = Array.from(new Float32Array(await res.arrayBuffer()));
    expect(Number(res.headers.get('x-creditlab-steps'))).toBe(values.length);
    return values;
  };
  const steps = await gql<{
    run: { groups: { nodes: { trajectories: { steps: { a: number }[] }[] }[] } };
  }>(
    server,
    `query($id: ID!, $m: MethodInput!) { run(id: $id) { groups(iteration: 0, first: 100) { nodes {
       trajectories { steps { a: advantage(method: $m) } } } } } }`,
    { id: runId, m: { name: method, params } },
  );
  expect(steps.errors).toBeUndefined();
  const compare = await gql<{ compare: { rows: { nodes: { advantages: number[] }[] } } }>(
    server,
    `query($id: ID!, $m: MethodInput!) { compare(runId: $id, methods: [$m], iterations: [0]) {
       rows(first: 1000) { nodes { advantages } } } }`,
    { id: runId, m: { name: method, params } },
  );
  expect(compare.errors).toBeUndefined();
  return {
    'POST json': flat(await (await post('application/json')).json()),
    'POST float32': await octet(await post('application/octet-stream')),
    'GET json': flat(await (await get('application/json')).json()),
    'GET float32': await octet(await get('application/octet-stream')),
    'Step.advantage': steps.data!.run.groups.nodes.flatMap((g) =>
      g.trajectories.flatMap((t) => t.steps.map((s) => s.a)),
    ),
    compare: compare.data!.compare.rows.nodes.map((r) => r.advantages[0] as number),
  };
}

async function expectEveryPathEquals(runId: string, batch: RolloutBatch) {
  for (const [method, params] of METHODS) {
    const want = library(batch, method, params);
    const got = await everyPath(runId, method, params);
    for (const [path, values] of Object.entries(got))
      expect({ method, path, values }).toEqual({ method, path, values: want });
  }
}

/** A run holding the example as iteration 0, every method's advantages stored and consumed once. */
async function runWithStoredAdvantages(name: string): Promise<string> {
  const { id } = await client.createRun({ name, env: 'e', method: 'gigpo' });
  await client.appendEvents(id, rolloutEvents(0, example));
  await expectEveryPathEquals(id, example);
  return id;
}

const clone = (b: RolloutBatch): RolloutBatch => JSON.parse(JSON.stringify(b)) as RolloutBatch;

/** One late step (reward `reward`) after the three steps of trajectory `trajectoryId` of group "key". */
const lateStepEvent = (trajectoryId: string, reward: number): ClientEvent => ({
  id: newEventId(),
  type: 'steps.appended',
  data: {
    iteration: 0,
    groupId: 'key',
    trajectoryId,
    firstStepIndex: 3,
    steps: [lateStep(reward)],
  },
});

test('late steps and a late group: every read path gives the estimator on the iteration as it now stands', async () => {
  const runId = await runWithStoredAdvantages('late steps');
  const late: ClientEvent[] = [
    lateStepEvent('key/t1', 0),
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: {
        iteration: 0,
        groups: [
          {
            id: 'late',
            trajectories: [
              { id: 'late/t1', steps: [lateStep(1)] },
              { id: 'late/t2', steps: [lateStep(0)] },
            ],
          },
        ],
      },
    },
  ];
  await client.appendEvents(runId, late);
  const now = clone(example);
  now.groups[0]!.trajectories[0]!.steps.push(lateStep(0));
  now.groups.push({
    id: 'late',
    trajectories: [
      { id: 'late/t1', steps: [lateStep(1)] },
      { id: 'late/t2', steps: [lateStep(0)] },
    ],
  });
  await expectEveryPathEquals(runId, now);
});

test('a late trajectory in an existing group, and an outcome changed by trajectory.finished', async () => {
  const runId = await runWithStoredAdvantages('late trajectory');
  await client.appendEvents(runId, [
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: {
        iteration: 0,
        groups: [{ id: 'key', trajectories: [{ id: 'key/t9', steps: [lateStep(1)] }] }],
      },
    },
  ]);
  const now = clone(example);
  now.groups[0]!.trajectories.push({ id: 'key/t9', steps: [lateStep(1)] });
  await expectEveryPathEquals(runId, now);

  // ppo-gae bootstraps a truncated end from its value: an outcome is an estimator input too.
  await client.appendEvents(runId, [
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'key', trajectoryId: 'key/t1', outcome: 'truncated' },
    },
  ]);
  now.groups[0]!.trajectories[0]!.outcome = 'truncated';
  await expectEveryPathEquals(runId, now);
});

test('versions are kept, and advantages.used says which one each consumption read', async () => {
  const runId = await runWithStoredAdvantages('versions');
  await client.appendEvents(runId, [
    {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 0,
        groupId: 'key',
        trajectoryId: 'key/t2',
        firstStepIndex: 3,
        steps: [lateStep(0)],
      },
    },
  ]);
  await client.advantages(runId, 0, 'grpo');
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    const used = await db.query<{ v: string }>(
      `SELECT data->>'inputsSeq' AS v FROM events
       WHERE run_id = $1 AND type = 'advantages.used' AND data->>'method' = 'grpo' ORDER BY seq`,
      [runId],
    );
    const seqs = used.rows.map((r) => Number(r.v));
    // two consumptions (POST json, POST float32) of the first version, then one of the second
    expect(seqs).toHaveLength(3);
    expect(seqs[0]).toBe(seqs[1]);
    expect(seqs[2]).toBeGreaterThan(seqs[0]!);
    const versions = await db.query<{ inputs_seq: string; step_count: number }>(
      `SELECT a.inputs_seq, a.step_count FROM advantage_set_iterations a
       JOIN advantage_sets s ON s.id = a.set_id WHERE s.run_id = $1 AND s.method = 'grpo' ORDER BY a.inputs_seq`,
      [runId],
    );
    expect(versions.rows.map((r) => [Number(r.inputs_seq), r.step_count])).toEqual([
      [seqs[0], 10],
      [seqs[2], 11],
    ]);
  } finally {
    await db.end();
  }
});

test('a recompute job recomputes a stale iteration instead of skipping it', async () => {
  const runId = await runWithStoredAdvantages('recompute stale');
  await client.appendEvents(runId, [
    {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 0,
        groupId: 'key',
        trajectoryId: 'key/t1',
        firstStepIndex: 3,
        steps: [lateStep(1)],
      },
    },
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  const job = await gql<{ recompute: { id: string } }>(
    server,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "gaca" }) { id } }',
    { r: runId },
  );
  for (let i = 0; i < 600; i++) {
    const j = await gql<{ job: { status: string; done: number; total: number } }>(
      server,
      'query($id: ID!) { job(id: $id) { status done total } }',
      { id: job.data!.recompute.id },
    );
    if (j.data!.job.status === 'COMPLETED') {
      expect(j.data!.job).toMatchObject({ done: 1, total: 1 });
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const now = clone(example);
  now.groups[0]!.trajectories[0]!.steps.push(lateStep(1));
  const got = await api(`${server.url}/v1/runs/${runId}/iterations/0/advantages?method=gaca`, {
    headers: { accept: 'application/octet-stream' },
  });
  expect(got.headers.get('x-creditlab-reused')).toBe('true'); // the job stored the fresh version
  expect(Array.from(new Float32Array(await got.arrayBuffer()))).toEqual(library(now, 'gaca', {}));
});

/** Polls until the server has packed the run's iteration 0 at its current log position. */
async function packedAtCurrentPosition(runId: string): Promise<number> {
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    for (;;) {
      const res = await db.query<{ seq: string }>(
        `SELECT c.inputs_seq AS seq FROM iteration_columns c JOIN iterations it
           ON it.run_id = c.run_id AND it.iteration = c.iteration AND it.inputs_seq = c.inputs_seq
         WHERE c.run_id = $1 AND c.iteration = 0`,
        [runId],
      );
      if (res.rows[0]) return Number(res.rows[0].seq);
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await db.end();
  }
}

test('a complete iteration, packed, then changed by a late step and an outcome: never read from the old packed row', async () => {
  const runId = await runWithStoredAdvantages('packed then late');
  // A later iteration makes iteration 0 complete: the server packs it in the background.
  await client.appendEvents(runId, [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 1, metrics: { loss: 1 } } },
  ]);
  const before = await packedAtCurrentPosition(runId);
  const late: ClientEvent[] = [
    lateStepEvent('key/t2', 1),
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'key', trajectoryId: 'key/t1', outcome: 'truncated' },
    },
  ];
  await client.appendEvents(runId, late);
  const now = clone(example);
  now.groups[0]!.trajectories[1]!.steps.push(lateStep(1));
  now.groups[0]!.trajectories[0]!.outcome = 'truncated';
  await expectEveryPathEquals(runId, now);
  // Packed again at the new position; computed afresh from that row, the same numbers.
  expect(await packedAtCurrentPosition(runId)).toBeGreaterThan(before);
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  await db.query('DELETE FROM advantage_set_iterations WHERE run_id = $1', [runId]);
  await db.end();
  await expectEveryPathEquals(runId, now);
});
