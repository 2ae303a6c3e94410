import { rolloutEvents } from '@creditlab/client';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import {
  isDatabaseUnavailable,
  isRecoveryConflict,
} from '../apps/server/src/errors/database-errors';
import { createPrismaClient } from '../libs/db/src/prisma';
import { fixtureBatches } from './support/fixture-batches';
import { removePrivateDirectories } from './support/private-postgres';
import { startReplicatedPostgres, type ReplicatedPostgres } from './support/replicated-postgres';
import { api, gql, spawnServer, type ServerProcess } from './support/test-server';

/**
 * A server with CREDITLAB_READ_REPLICA_URL naming a hot standby that streams from its database
 * (docs/scaling.md, "Read replicas for queries"): GraphQL queries read the standby, mutations and
 * ingest the primary, and /readyz says when the standby is behind or gone. The standby's replay is
 * paused to tell the two apart: what a query shows then can only have come from the standby.
 */
describe('GraphQL queries on a read replica', () => {
  let pair: ReplicatedPostgres;
  let server: ServerProcess;
  let standby: pg.Client;
  const batch = fixtureBatches()[0]![1];

  beforeAll(async () => {
    // Replay waits a second for the standby's queries before it cancels them (the default is 30 s).
    pair = await startReplicatedPostgres('creditlab', { max_standby_streaming_delay: '1s' });
    server = await spawnServer({
      DATABASE_URL: pair.primaryUrl,
      CREDITLAB_READ_REPLICA_URL: pair.replicaUrl,
    });
    standby = new pg.Client({ connectionString: pair.replicaUrl });
    standby.on('error', () => undefined); // the last test stops it
    await standby.connect();
  });
  afterAll(async () => {
    await server?.stop();
    await standby?.end().catch(() => undefined);
    await pair?.stop();
    await removePrivateDirectories();
  });

  async function newRun(): Promise<string> {
    const res = await api(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'replica', env: 'household', method: 'grpo' }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  async function send(runId: string, events: unknown[]): Promise<number> {
    const res = await api(`${server.url}/v1/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: events.map((e) => JSON.stringify(e)).join('\n'),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { lastSeq: number }).lastSeq;
  }
  /** An iteration's rollouts and its metrics. */
  const append = (runId: string, iteration: number) =>
    send(runId, [
      ...rolloutEvents(iteration, batch),
      {
        id: randomUUID(),
        type: 'metrics.logged',
        data: { iteration, metrics: { loss: iteration } },
      },
    ]);

  interface RunView {
    runs: { nodes: { id: string; lastSeq: number; iterationCount: number }[] };
    metricSeries: { series: { name: string; points: { iteration: number }[] }[] }[];
    run: {
      status: string;
      lastSeq: number;
      lastIteration: number | null;
      iterationCount: number;
      iterations: { index: number }[];
      events: { nodes: { seq: number }[] };
      groups: {
        nodes: { id: string; trajectories: { id: string; steps: { reward: number }[] }[] }[];
      };
      later: { nodes: { id: string }[] };
    };
  }
  /** Every kind of read a query makes of a run: the list, series, events, iterations, rollouts. */
  const VIEW = `query ($id: ID!) {
    runs(first: 100) { nodes { id lastSeq iterationCount } }
    metricSeries(runIds: [$id]) { series { name points { iteration } } }
    run(id: $id) { status lastSeq lastIteration iterationCount iterations { index }
      events(first: 1000) { nodes { seq } }
      groups(iteration: 0) { nodes { id trajectories { id steps { reward } } } }
      later: groups(iteration: 1) { nodes { id } } } }`;
  const view = async (id: string): Promise<RunView> => {
    const res = await gql<RunView>(server, VIEW, { id });
    expect(res.errors).toBeUndefined();
    return res.data!;
  };
  /**
   * Polls the query until `done` holds (the standby replays what the primary wrote). Until the
   * standby has replayed the run's creation, `run` is null: not done yet.
   */
  const until = async (id: string, done: (r: RunView) => boolean): Promise<RunView> => {
    for (;;) {
      const seen = await view(id);
      if ((seen.run as RunView['run'] | null) !== null && done(seen)) return seen;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const readyz = async () => {
    const res = await fetch(`${server.url}/readyz`);
    return { status: res.status, body: (await res.json()) as { warnings: Record<string, string> } };
  };

  test('queries show what the standby has replayed; mutations, ingest and advantages go to the primary', async () => {
    const runId = await newRun();
    const first = await append(runId, 0);
    await until(runId, (r) => r.run.lastSeq === first);
    expect((await readyz()).body.warnings).toEqual({});

    await standby.query('SELECT pg_wal_replay_pause()');
    let second = 0;
    try {
      for (;;) {
        const state = await standby.query<{ s: string }>(
          'SELECT pg_get_wal_replay_pause_state() AS s',
        );
        if (state.rows[0]?.s === 'paused') break;
        await new Promise((r) => setTimeout(r, 50));
      }

      // Ingest writes the primary whatever the standby does: a step more for a trajectory of
      // iteration 0, and iteration 1 with its metrics.
      const group = batch.groups[0]!;
      const trajectory = group.trajectories[0]!;
      await send(runId, [
        {
          id: randomUUID(),
          type: 'steps.appended',
          data: {
            iteration: 0,
            groupId: group.id,
            trajectoryId: trajectory.id,
            firstStepIndex: trajectory.steps.length,
            steps: [{ ...trajectory.steps[0]!, reward: 5 }],
          },
        },
      ]);
      second = await append(runId, 1);
      // A mutation reads back what it wrote, from the primary: the appends and the finish are there.
      const finished = await gql<{ finishRun: { status: string; lastSeq: number } }>(
        server,
        `mutation ($id: ID!) { finishRun(runId: $id, status: COMPLETED) { status lastSeq } }`,
        { id: runId },
      );
      expect(finished.errors).toBeUndefined();
      expect(finished.data!.finishRun).toEqual({ status: 'COMPLETED', lastSeq: second + 1 });

      // A query sees none of it, in any of its reads: they went to the paused standby.
      const stale = await view(runId);
      expect(stale.run).toMatchObject({
        status: 'RUNNING',
        lastSeq: first,
        lastIteration: 0,
        iterationCount: 1,
        later: { nodes: [] },
      });
      expect(stale.run.iterations.map((i) => i.index)).toEqual([0]);
      expect(stale.run.events.nodes.map((e) => e.seq)).toEqual(range(1, first));
      expect(stale.runs.nodes.find((r) => r.id === runId)).toEqual({
        id: runId,
        lastSeq: first,
        iterationCount: 1,
      });
      expect(stale.metricSeries[0]?.series).toEqual([{ name: 'loss', points: [{ iteration: 0 }] }]);
      const shown = stale.run.groups.nodes[0]!.trajectories[0]!;
      expect(shown.id).toBe(trajectory.id);
      expect(shown.steps.map((st) => st.reward)).toEqual(trajectory.steps.map((st) => st.reward));

      // Advantages asked in a query are computed and stored on the primary (the standby would refuse
      // the write), for the iteration as the primary has it.
      const advantages = await gql<{
        run: { groups: { nodes: { trajectories: { steps: { advantage: number }[] }[] }[] } };
      }>(
        server,
        `query ($id: ID!) { run(id: $id) { groups(iteration: 0) { nodes { trajectories { steps { advantage(method: { name: "grpo" }) } } } } } }`,
        { id: runId },
      );
      expect(advantages.errors).toBeUndefined();
      const values = advantages.data!.run.groups.nodes.flatMap((g) =>
        g.trajectories.flatMap((t) => t.steps.map((st) => st.advantage)),
      );
      expect(values.length).toBe(
        stale.run.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps)).length,
      );
      expect(values.every(Number.isFinite)).toBe(true);

      const paused = await readyz();
      expect(paused.status).toBe(200); // a lagging replica does not take the process out of service
      expect(paused.body.warnings.readReplica).toMatch(/^replay paused, \d+ bytes of WAL behind/);
    } finally {
      // Whatever failed above, the tests after this one need the standby replaying.
      await standby.query('SELECT pg_wal_replay_resume()');
    }
    const caught = await until(runId, (r) => r.run.lastSeq === second + 1);
    expect(caught.run).toMatchObject({ status: 'COMPLETED', lastIteration: 1, iterationCount: 2 });
    expect(caught.run.later.nodes.map((g) => g.id)).toEqual(batch.groups.map((g) => g.id));
    expect(caught.run.groups.nodes[0]!.trajectories[0]!.steps.at(-1)?.reward).toBe(5);
    expect(caught.metricSeries[0]?.series[0]?.points).toEqual([{ iteration: 0 }, { iteration: 1 }]);
    expect((await readyz()).body.warnings).toEqual({});
  });

  test("the start-up line names the standby (never its password), and its connections are the server's", async () => {
    const line =
      server
        .output()
        .split('\n')
        .find((l) => l.includes('listening on')) ?? '';
    expect(line).toMatch(/; queries read the read replica at localhost:\d+\/creditlab/);
    expect(line).not.toContain('creditlab@');
    const runId = await newRun();
    await until(runId, (r) => r.run.lastSeq === 1);
    const names = await standby.query<{ name: string }>(
      `SELECT DISTINCT application_name AS name FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    expect(names.rows.map((r) => r.name)).toEqual(['creditlab-server']);
  });

  test('a query the standby cancels to replay the primary is known as such (the caller is told to retry)', async () => {
    const primary = new pg.Client({ connectionString: pair.primaryUrl });
    const reader = new pg.Client({ connectionString: pair.replicaUrl });
    const pool = new pg.Pool({ connectionString: pair.replicaUrl, max: 1 });
    const prisma = createPrismaClient(pool);
    for (const c of [primary, reader]) c.on('error', () => undefined);
    await primary.connect();
    await reader.connect();
    try {
      await primary.query(
        'CREATE TABLE replay_conflict (x int); INSERT INTO replay_conflict VALUES (1)',
      );
      for (;;) {
        const seen = await reader.query(`SELECT to_regclass('replay_conflict') IS NOT NULL AS ok`);
        if (seen.rows[0]?.ok) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // Two reads of the table on the standby, as node-postgres and Prisma send them; dropping it on
      // the primary makes replay wait for their locks, then cancel them (max_standby_streaming_delay).
      const SLEEP = 'SELECT pg_sleep(60) FROM replay_conflict';
      const cancelled = [
        reader.query(SLEEP).then(
          () => undefined,
          (e: unknown) => e,
        ),
        prisma.$queryRawUnsafe(SLEEP).then(
          () => undefined,
          (e: unknown) => e,
        ),
      ];
      for (;;) {
        const running = await standby.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1 AND state = 'active'`,
          [SLEEP],
        );
        if (running.rows[0]?.n === 2) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await primary.query('DROP TABLE replay_conflict');
      // publicError (internal-errors.ts) answers such an error as DATABASE_UNAVAILABLE, "retry it".
      const [fromPg, fromPrisma] = await Promise.all(cancelled);
      expect(fromPg).toMatchObject({ code: '40001' });
      expect(String((fromPg as Error).message)).toMatch(/conflict with recovery/);
      for (const error of [fromPg, fromPrisma]) {
        expect(isRecoveryConflict(error)).toBe(true);
        expect(isDatabaseUnavailable(error)).toBe(false);
      }
    } finally {
      await prisma.$disconnect();
      await pool.end();
      await reader.end().catch(() => undefined);
      await primary.end();
    }
  });

  test('a replica setting that names the primary itself is said not to be a standby', async () => {
    const misnamed = await spawnServer({
      DATABASE_URL: pair.primaryUrl,
      CREDITLAB_READ_REPLICA_URL: pair.primaryUrl,
    });
    try {
      const res = await fetch(`${misnamed.url}/readyz`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { warnings: Record<string, string> };
      expect(body.warnings.readReplica).toMatch(
        /^not a standby \(pg_is_in_recovery\(\) is false\)/,
      );
    } finally {
      await misnamed.stop();
    }
  });

  test("a standby of another cluster is said to be one (its system identifier is not the primary's)", async () => {
    const other = await startReplicatedPostgres('creditlab');
    const crossed = await spawnServer({
      DATABASE_URL: pair.primaryUrl,
      CREDITLAB_READ_REPLICA_URL: other.replicaUrl,
    }).catch(async (e: unknown) => {
      await other.stop();
      throw e;
    });
    try {
      const res = await fetch(`${crossed.url}/readyz`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { warnings: Record<string, string> };
      expect(body.warnings.readReplica).toMatch(
        /^a standby of another cluster \(its system identifier is \d+, the primary's \d+\)/,
      );
    } finally {
      await crossed.stop();
      await other.stop();
    }
  });

  test('a replica host that never answers fails /readyz and queries in seconds, and mutations go on', async () => {
    // Accepts connections and never says a word, as a host behind a dead load balancer may.
    const held: Socket[] = [];
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const stalled = await spawnServer({
      DATABASE_URL: pair.primaryUrl,
      CREDITLAB_READ_REPLICA_URL: `postgres://postgres:creditlab@127.0.0.1:${port}/creditlab`,
    });
    // Without a limit of its own each would wait as long as the connection stays open: for ever.
    const within = <T>(what: string, p: Promise<T>) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`${what} still waiting after 60 s`)), 60_000),
        ),
      ]);
    try {
      const res = await within('/readyz', fetch(`${stalled.url}/readyz`));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { warnings: Record<string, string> };
      expect(body.warnings.readReplica).toMatch(/^unreachable: /);
      const query = await within('a query', gql(stalled, `{ runs(first: 1) { nodes { id } } }`));
      expect(query.errors?.[0]).toMatchObject({ extensions: { error: 'DATABASE_UNAVAILABLE' } });
      const created = await within(
        'a mutation',
        gql<{ createRun: { name: string } }>(
          stalled,
          `mutation { createRun(input: { name: "beside a silent replica", env: "e", method: "grpo" }) { name } }`,
        ),
      );
      expect(created.data?.createRun.name).toBe('beside a silent replica');
    } finally {
      await stalled.stop();
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });

  test('a standby that is gone fails queries with a message, not the process', async () => {
    const runId = await newRun();
    await until(runId, (r) => r.run.lastSeq === 1);
    await standby.end();
    await pair.stopStandby();

    const ready = await readyz();
    expect(ready.status).toBe(200);
    expect(ready.body.warnings.readReplica).toMatch(/^unreachable: /);
    const query = await gql(server, VIEW, { id: runId });
    expect(query.data?.run ?? null).toBeNull();
    // Said as the primary's absence is (its Unix socket is gone: ENOENT), not as an internal error.
    expect(query.errors?.[0]).toMatchObject({
      message: 'the database is unavailable; retry in a few seconds',
      extensions: { error: 'DATABASE_UNAVAILABLE' },
    });
    // Ingest and mutations go on, on the primary.
    expect(await append(runId, 0)).toBe(3);
    const finished = await gql<{ finishRun: { status: string } }>(
      server,
      `mutation ($id: ID!) { finishRun(runId: $id, status: FAILED) { status } }`,
      { id: runId },
    );
    expect(finished.data?.finishRun.status).toBe('FAILED');
  });
});

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, k) => from + k);
