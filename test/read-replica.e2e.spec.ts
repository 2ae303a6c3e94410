import { rolloutEvents } from '@creditlab/client';
import pg from 'pg';
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
    pair = await startReplicatedPostgres('creditlab');
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

  async function append(runId: string, iteration: number): Promise<number> {
    const body = rolloutEvents(iteration, batch)
      .map((e) => JSON.stringify(e))
      .join('\n');
    const res = await api(`${server.url}/v1/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { lastSeq: number }).lastSeq;
  }

  interface RunView {
    status: string;
    lastSeq: number;
    lastIteration: number | null;
    iterations: { index: number }[];
    groups: { nodes: { id: string }[] };
  }
  const RUN = `query ($id: ID!) { run(id: $id) { status lastSeq lastIteration iterations { index } groups(iteration: 1) { nodes { id } } } }`;
  const runView = async (id: string): Promise<RunView> => {
    const res = await gql<{ run: RunView }>(server, RUN, { id });
    expect(res.errors).toBeUndefined();
    return res.data!.run;
  };
  /** Polls the query until `done` holds (the standby replays what the primary wrote). */
  const until = async (id: string, done: (r: RunView) => boolean): Promise<RunView> => {
    for (;;) {
      const view = await runView(id);
      if (done(view)) return view;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const readyz = async () => {
    const res = await fetch(`${server.url}/readyz`);
    return { status: res.status, body: (await res.json()) as { warnings: Record<string, string> } };
  };

  test('queries show what the standby has replayed; mutations and ingest go to the primary', async () => {
    const runId = await newRun();
    const first = await append(runId, 0);
    await until(runId, (r) => r.lastSeq === first);
    expect((await readyz()).body.warnings).toEqual({});

    await standby.query('SELECT pg_wal_replay_pause()');
    await until(runId, () => true); // a query answers while paused
    for (;;) {
      const state = await standby.query<{ s: string }>(
        'SELECT pg_get_wal_replay_pause_state() AS s',
      );
      if (state.rows[0]?.s === 'paused') break;
      await new Promise((r) => setTimeout(r, 50));
    }

    // Ingest writes the primary whatever the standby does.
    const second = await append(runId, 1);
    expect(second).toBeGreaterThan(first);
    // A mutation reads back what it wrote, from the primary: the append and the finish are there.
    const finished = await gql<{ finishRun: { status: string; lastSeq: number } }>(
      server,
      `mutation ($id: ID!) { finishRun(runId: $id, status: COMPLETED) { status lastSeq } }`,
      { id: runId },
    );
    expect(finished.errors).toBeUndefined();
    expect(finished.data!.finishRun).toEqual({ status: 'COMPLETED', lastSeq: second + 1 });
    // A query sees neither: its reads went to the paused standby.
    const stale = await runView(runId);
    expect(stale).toMatchObject({
      status: 'RUNNING',
      lastSeq: first,
      lastIteration: 0,
      groups: { nodes: [] },
    });
    expect(stale.iterations.map((i) => i.index)).toEqual([0]);

    const paused = await readyz();
    expect(paused.status).toBe(200); // a lagging replica does not take the process out of service
    expect(paused.body.warnings.readReplica).toMatch(/^replay paused, \d+ bytes of WAL behind/);

    await standby.query('SELECT pg_wal_replay_resume()');
    const caught = await until(runId, (r) => r.lastSeq === second + 1);
    expect(caught).toMatchObject({ status: 'COMPLETED', lastIteration: 1 });
    expect(caught.groups.nodes.map((g) => g.id)).toEqual(batch.groups.map((g) => g.id));
    expect((await readyz()).body.warnings).toEqual({});
  });

  test("the standby's connections are the server's, named as its others are", async () => {
    const runId = await newRun();
    await until(runId, (r) => r.lastSeq === 1);
    const names = await standby.query<{ name: string }>(
      `SELECT DISTINCT application_name AS name FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    expect(names.rows.map((r) => r.name)).toEqual(['creditlab-server']);
  });

  test('a standby that is gone fails queries with a message, not the process', async () => {
    const runId = await newRun();
    await until(runId, (r) => r.lastSeq === 1);
    await standby.end();
    await pair.stopStandby();

    const ready = await readyz();
    expect(ready.status).toBe(200);
    expect(ready.body.warnings.readReplica).toMatch(/^unreachable: /);
    const query = await gql(server, RUN, { id: runId });
    expect(query.data?.run ?? null).toBeNull();
    // Said as the primary's absence is (its Unix socket is gone: ENOENT), not as an internal error.
    expect(query.errors?.[0]).toMatchObject({
      message: 'the database is unavailable; retry in a few seconds',
      extensions: { error: 'DATABASE_UNAVAILABLE' },
    });
    // Ingest and mutations go on, on the primary.
    expect(await append(runId, 0)).toBe(2);
    const finished = await gql<{ finishRun: { status: string } }>(
      server,
      `mutation ($id: ID!) { finishRun(runId: $id, status: FAILED) { status } }`,
      { id: runId },
    );
    expect(finished.data?.finishRun.status).toBe('FAILED');
  });
});
