import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import pg from 'pg';
import { npmRun } from './support/cli';
import { tableChecksums } from './support/database-snapshot';
import { fixtureBatches } from './support/fixture-batches';
import { ADMIN_KEY, api, spawnServer, type ServerProcess } from './support/test-server';
import { createTestDatabase } from './support/test-database';
import { sqlQuery } from './support/sql-query';
import { stepsAppended } from './support/step-by-step-events';

/**
 * The read side is a projection of the event log: `npm run db:rebuild` drops it and builds it
 * again from the events, byte for byte (every row of every projected table, derived ids and
 * times included), and advantages computed afterwards equal those before.
 */
// step_slices as stored (where embeddings are kept included) and the steps as the view reads them.
const PROJECTED = [
  'texts',
  'rollout_groups',
  'trajectories',
  'step_slices',
  'steps',
  'iterations',
  'run_metrics',
];
const RUN_SUMMARIES =
  'SELECT id, status, last_seq, last_iteration, embedding_dim, summary, finished_at, projection_version FROM runs ORDER BY id';

let databaseUrl: string;
let server: ServerProcess | undefined;
const runs: string[] = [];
const READS: [string, string][] = [
  ['grpo', '{}'],
  ['gigpo', '{"gamma":0.9}'],
  ['gated-bepo', '{}'],
  ['bipace', '{}'],
  ['ppo-gae', '{"bootstrapTruncated":true}'],
];

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  server = await spawnServer({ DATABASE_URL: databaseUrl });
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const fixtures = await client.createRun({ name: 'fixtures', env: 'fixtures', method: 'gigpo' });
  const batches = fixtureBatches().filter(([name]) => name.startsWith('verl-agent'));
  for (const [i, [, batch]] of batches.entries())
    await client.appendEvents(fixtures.id, rolloutEvents(i, batch, 11, { columnar: false }));
  // The same rollouts with their steps sent as columns (the log keeps them as sent).
  const columnar = await client.createRun({ name: 'columnar', env: 'fixtures', method: 'gigpo' });
  for (const [i, [, batch]] of batches.entries()) {
    const events = rolloutEvents(i, batch, 11, { columnar: true });
    expect(events.every((e) => 'columns' in e.data)).toBe(true);
    await client.appendEvents(columnar.id, events);
  }
  const streamed = await client.createRun({ name: 'streamed', env: 'e', method: 'grpo' });
  const step = (r: number) => ({
    state: `room ${r % 3}`,
    action: r % 2 ? 'look' : 'go',
    reward: r,
    embedding: [r, 1, 0.5],
    value: 0.25 * r,
    trueAdvantage: r - 1,
  });
  await client.appendEvents(streamed.id, [
    ...[0, 1, 2].map((n) => ({
      id: newEventId(),
      type: 'steps.appended' as const,
      data: { iteration: 0, groupId: 'g', trajectoryId: 't', firstStepIndex: n, steps: [step(n)] },
    })),
    {
      id: newEventId(),
      type: 'rollouts.appended',
      data: {
        iteration: 0,
        // a step without an embedding: this event's embeddings stay in its step slices
        groups: [
          {
            id: 'g',
            trajectories: [{ id: 'u', steps: [step(3), { ...step(4), embedding: undefined }] }],
          },
        ],
      },
    },
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 0, groupId: 'g', trajectoryId: 't', outcome: 'truncated' },
    },
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 0, metrics: { loss: 2 } } },
    {
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: 0, metrics: { loss: 1, kl: 0.5 } },
    },
    { id: newEventId(), type: 'evaluation.logged', data: { iteration: 1, successRate: 0.5 } },
    { id: newEventId(), type: 'run.finished', data: { status: 'completed', summary: { n: 1 } } },
    { id: newEventId(), type: 'run.resumed', data: { reason: 'one more' } },
    { id: newEventId(), type: 'run.finished', data: { status: 'aborted' } },
  ]);
  // One request of several chunks (the server writes 16,000 steps at a time, and projects the next
  // chunk while the one before writes): a trajectory, an iteration and a metric change in every chunk.
  const chunked = await client.createRun({ name: 'chunked', env: 'e', method: 'grpo' });
  const long = (first: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      state: `s${(first + i) % 7}`,
      action: `a${(first + i) % 3}`,
      reward: (first + i) % 5,
    }));
  await client.appendEvents(
    chunked.id,
    Array.from({ length: 9 }, (_, k) => [
      stepsAppended(0, 'g', 't', 3600 * k, long(3600 * k, 3600)),
      {
        id: newEventId(),
        type: 'rollouts.appended' as const,
        data: {
          iteration: k % 2,
          groups: [{ id: `h${k}`, trajectories: [{ id: `u${k}`, steps: long(k, 40) }] }],
        },
      },
      {
        id: newEventId(),
        type: 'metrics.logged' as const,
        data: { iteration: 0, metrics: { loss: k } },
      },
    ]).flat(),
  );
  const trained = await npmRun(
    'train',
    ['--env', 'sokoban-tiny', '--iterations', '2', '--tasks', '2', '--group-size', '2'],
    { CREDITLAB_URL: server.url, CREDITLAB_API_KEY: ADMIN_KEY },
  );
  expect(trained.code).toBe(0);
  runs.push(fixtures.id, streamed.id, trained.stdout.trim(), columnar.id, chunked.id);
});

afterAll(async () => {
  await server?.stop();
});

const query = <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []) =>
  sqlQuery<T>(databaseUrl, sql, params);

/** Every advantage of every run, iteration and method of READS, read through the API. */
async function advantages(url: string): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const runId of runs) {
    const its = await query<{ iteration: number }>(
      'SELECT iteration FROM iterations WHERE run_id = $1 AND step_count > 0 ORDER BY iteration',
      [runId],
    );
    for (const { iteration } of its) {
      for (const [method, params] of READS) {
        const res = await api(
          `${url}/v1/runs/${runId}/iterations/${iteration}/advantages?method=${method}&params=${encodeURIComponent(params)}`,
          { headers: { accept: 'application/octet-stream' } },
        );
        if (res.status !== 200) {
          // A method the run's steps cannot feed (e.g. bipace without embeddings) says so, before and after.
          out[`${runId}/${iteration}/${method}`] = [res.status];
          continue;
        }
        out[`${runId}/${iteration}/${method}`] = Array.from(
          new Float32Array(await res.arrayBuffer()),
        );
      }
    }
  }
  return out;
}

/** How many iterations the server has packed (iteration_columns, a cache it writes in the background). */
const packedCount = async () =>
  Number((await query<{ n: string }>('SELECT count(*) AS n FROM iteration_columns'))[0]!.n);

test('db:rebuild reproduces every projection byte for byte; advantages computed afterwards are the same', async () => {
  const before = await advantages(server!.url);
  expect(Object.keys(before).length).toBeGreaterThan(50);
  // The complete iterations get packed; a rebuild drops those rows with the projections they copy.
  while ((await packedCount()) === 0) await new Promise((r) => setTimeout(r, 25));
  // Embeddings of both stores: in the slices (events where some steps have none), in their event's log
  // body (every step with one, e.g. the trainer's hidden states; migrations/20261211000000_embeddings_in_the_log).
  const [stores] = await query<{ in_rows: number; in_body: number }>(
    `SELECT count(embedding)::int AS in_rows, count(embedding_at)::int AS in_body FROM step_slices`,
  );
  expect(stores!.in_rows).toBeGreaterThan(0);
  expect(stores!.in_body).toBeGreaterThan(0);
  const checksums = await tableChecksums(databaseUrl, PROJECTED);
  const summaries = await query(RUN_SUMMARIES);
  await server!.stop();
  server = undefined;

  // Damage the projections (as only a rebuild may), to see the rebuild put them back.
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  await c.query('BEGIN');
  await c.query(`SET LOCAL creditlab.rebuild = 'on'`);
  await c.query('DELETE FROM step_slices WHERE run_id = $1 AND iteration = 3', [runs[0]]);
  await c.query('DELETE FROM step_slices WHERE run_id = $1 AND iteration = 1', [runs[2]]);
  await c.query(`UPDATE iterations SET metrics = '{}' WHERE run_id = $1`, [runs[1]]);
  await c.query(`UPDATE runs SET status = 'running', last_seq = 0`);
  await c.query('COMMIT');
  await c.end();
  expect(await tableChecksums(databaseUrl, PROJECTED)).not.toEqual(checksums);

  const all = await npmRun('db:rebuild', [], { DATABASE_URL: databaseUrl });
  expect(all.stderr).toBe('');
  expect(all.code).toBe(0);
  expect(all.stdout).toContain(`rebuilt ${runs.length} runs`);
  expect(await tableChecksums(databaseUrl, PROJECTED)).toEqual(checksums);
  expect(await packedCount()).toBe(0);
  expect(await query(RUN_SUMMARIES)).toEqual(summaries);

  const one = await npmRun('db:rebuild', ['--run', runs[1]!], { DATABASE_URL: databaseUrl });
  expect(one.code).toBe(0);
  expect(one.stdout).toMatch(new RegExp(`run ${runs[1]}: \\d+ events, 5 steps`));
  expect(await tableChecksums(databaseUrl, PROJECTED)).toEqual(checksums);

  // Computed afresh from the rebuilt projections (not read from the stored versions).
  await query('DELETE FROM advantage_set_iterations');
  server = await spawnServer({ DATABASE_URL: databaseUrl });
  expect(await advantages(server.url)).toEqual(before);
});

test('db:rebuild refuses what it cannot do, in one line', async () => {
  const bad = await npmRun('db:rebuild', ['--run', 'nope'], { DATABASE_URL: databaseUrl });
  expect(bad).toMatchObject({ code: 2, stderr: 'db:rebuild: --run: not a run id: nope\n' });
  const missing = await npmRun('db:rebuild', ['--run', '11111111-1111-4111-8111-111111111111'], {
    DATABASE_URL: databaseUrl,
  });
  expect(missing.code).toBe(1);
  expect(missing.stderr).toBe('db:rebuild: run "11111111-1111-4111-8111-111111111111" not found\n');
});

test('a rebuild while a server runs: its packer packs the rebuilt run again, with no new event', async () => {
  const runId = runs[0]!; // running, so every iteration but its last is complete and gets packed
  const packedOfRun = async () =>
    Number(
      (
        await query<{ n: string }>(
          'SELECT count(*) AS n FROM iteration_columns WHERE run_id = $1',
          [runId],
        )
      )[0]!.n,
    );
  const complete = Number(
    (
      await query<{ n: string }>(
        'SELECT count(*) AS n FROM iterations WHERE run_id = $1 AND step_count > 0 AND iteration < (SELECT last_iteration FROM runs WHERE id = $1)',
        [runId],
      )
    )[0]!.n,
  );
  expect(complete).toBeGreaterThan(0);
  // An append makes this server's packer pass over the run and remember how far it packed it.
  const client = new CreditlabClient({ url: server!.url, apiKey: ADMIN_KEY });
  await client.appendEvents(runId, [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 0, metrics: { seen: 1 } } },
  ]);
  const until = async (n: number) => {
    const deadline = Date.now() + 60_000;
    while ((await packedOfRun()) !== n && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    return packedOfRun();
  };
  expect(await until(complete)).toBe(complete);

  const rebuilt = await npmRun('db:rebuild', ['--run', runId], { DATABASE_URL: databaseUrl });
  expect(rebuilt.code).toBe(0);
  // The rebuild dropped the packed rows; the server heard of it and packs them again.
  expect(await until(complete)).toBe(complete);
  const rows = await query<{ iteration: number; fresh: boolean }>(
    `SELECT c.iteration, c.inputs_seq = it.inputs_seq AS fresh FROM iteration_columns c
     JOIN iterations it USING (run_id, iteration) WHERE c.run_id = $1`,
    [runId],
  );
  expect(rows.every((r) => r.fresh)).toBe(true);
});
