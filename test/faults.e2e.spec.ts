import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import { startEmbeddedPostgres } from '@creditlab/db';
import { chmod, rm } from 'node:fs/promises';
import path from 'node:path';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import {
  alive,
  postmasterPid,
  privateEmbeddedPostgres,
  runServerToExit,
  trackPostmaster,
  waitFor,
  removePrivateDirectories,
} from './support/private-postgres';
import { ADMIN_KEY, api, gql, spawnServer, type ServerProcess } from './support/test-server';

/**
 * Hostile days for the embedded default: its PostgreSQL killed outright (under load and idle),
 * the server killed outright (leaving its PostgreSQL behind), two servers on one data directory.
 */

afterAll(removePrivateDirectories);

const SHAPE = { groups: 12, groupSize: 8, maxSteps: 20, statesPerGroup: 8 };

/** One run written iteration by iteration; a refused request is retried with the same events. */
interface Writer {
  runId: string;
  seed: number;
  next: number;
  acked: Set<number>;
  statuses: number[];
  inFlight: number;
  events: ClientEvent[][];
  steps: number[];
}

async function newWriter(server: ServerProcess, k: number): Promise<Writer> {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: `faults-${k}`, env: 'synthetic', method: 'gigpo' });
  return {
    runId: id,
    seed: 1000 * (k + 1),
    next: 0,
    acked: new Set(),
    statuses: [],
    inFlight: 0,
    events: [],
    steps: [],
  };
}

/** The events of iteration `i` (made once: a retry sends the same event ids). */
function iterationEvents(w: Writer, i: number): ClientEvent[] {
  if (!w.events[i]) {
    const batch = syntheticBatchJson(SHAPE, w.seed + i);
    w.events[i] = rolloutEvents(i, batch);
    w.steps[i] = batch.groups.reduce(
      (n, g) => n + g.trajectories.reduce((m, t) => m + t.steps.length, 0),
      0,
    );
  }
  return w.events[i];
}

async function writeUntil(server: ServerProcess, w: Writer, stop: () => boolean): Promise<void> {
  while (!stop()) {
    const i = w.next;
    const body =
      iterationEvents(w, i)
        .map((e) => JSON.stringify(e))
        .join('\n') + '\n';
    w.inFlight++;
    const res = await api(`${server.url}/v1/runs/${w.runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body,
    }).finally(() => w.inFlight--);
    await res.arrayBuffer();
    w.statuses.push(res.status);
    if (res.status === 200) {
      w.acked.add(i);
      w.next++;
    } else await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Kills the postmaster with SIGKILL and waits until the server has seen it end (which can come a
 * moment after it is a zombie, dead to `alive`); PostgreSQL cannot come back until `release`.
 */
async function killPostgres(
  server: ServerProcess,
  dataDir: string,
): Promise<{ release: () => Promise<void> }> {
  const pid = (await postmasterPid(dataDir)) as number;
  // PostgreSQL refuses a data directory others may enter: the restarts the server attempts fail
  // until the mode is back, so the outage lasts until the test has looked at it.
  await chmod(dataDir, 0o755);
  process.kill(pid, 'SIGKILL');
  await waitFor(() => server.output().includes(`embedded PostgreSQL (pid ${pid}) exited`));
  return { release: () => chmod(dataDir, 0o700) };
}

async function expectUnavailable(server: ServerProcess): Promise<void> {
  const ready = await fetch(`${server.url}/readyz`);
  expect(ready.status).toBe(503);
  expect(await ready.json()).toMatchObject({
    status: 'not ready',
    // The server knows its postmaster is dead, so it says so rather than asking a backend the dead
    // postmaster left behind, which can still answer for a moment.
    checks: {
      database: 'unreachable: the embedded PostgreSQL is not running; the server is restarting it',
    },
  });
  const created = await api(`${server.url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'during the outage', env: 'e', method: 'grpo' }),
  });
  expect(created.status).toBe(503);
  expect(await created.json()).toMatchObject({ statusCode: 503, error: 'DATABASE_UNAVAILABLE' });
  const read = await gql(server, '{ runs(first: 1) { nodes { id } } }');
  expect(read.errors?.[0]?.extensions?.error).toBe('DATABASE_UNAVAILABLE');
}

test('kill -9 of the embedded PostgreSQL, six times under load and idle: the server stays up, answers 503, restarts it and keeps everything acknowledged', async () => {
  const pg = await privateEmbeddedPostgres();
  const server = await spawnServer(pg.env);
  try {
    let postmaster = await trackPostmaster(pg.dataDir);
    const writers = [await newWriter(server, 0), await newWriter(server, 1)];
    for (let cycle = 0; cycle < 6; cycle++) {
      const underLoad = cycle % 2 === 0;
      let stopped = false;
      const acksBefore = writers.map((w) => w.acked.size);
      const loops = underLoad ? writers.map((w) => writeUntil(server, w, () => stopped)) : [];
      let outage: { release: () => Promise<void> };
      try {
        if (underLoad)
          await waitFor(
            () =>
              writers.every((w, k) => w.acked.size > (acksBefore[k] as number)) &&
              writers.some((w) => w.inFlight > 0),
          );
        outage = await killPostgres(server, pg.dataDir);
        await expectUnavailable(server);
      } finally {
        stopped = true;
        await Promise.all(loops);
      }
      expect(server.process.exitCode).toBeNull();
      await outage.release();
      await waitFor(async () => (await fetch(`${server.url}/readyz`)).status === 200);
      const previous = postmaster;
      postmaster = await waitFor(async () => {
        const pid = await postmasterPid(pg.dataDir);
        return pid !== previous && pid;
      });
      await trackPostmaster(pg.dataDir);
    }
    for (const w of writers) {
      // Every answer was a success or "the database is unavailable", never an internal error.
      expect(new Set(w.statuses)).toEqual(new Set([200, 503]));
      const res = await gql<{ run: { iterations: { index: number; stepCount: number }[] } }>(
        server,
        'query($id: ID!) { run(id: $id) { iterations { index stepCount } } }',
        { id: w.runId },
      );
      const stored = new Map(res.data!.run.iterations.map((i) => [i.index, i.stepCount]));
      for (const i of w.acked) expect([i, stored.get(i)]).toEqual([i, w.steps[i]]);
      // A request that got 503 is all or nothing: no iteration is stored in part.
      for (const [i, n] of stored) expect([i, n]).toEqual([i, w.steps[i]]);
    }
    expect(server.output()).toMatch(/embedded PostgreSQL \(pid \d+\) exited unexpectedly/);
    expect(server.output()).toMatch(/embedded PostgreSQL restarted/);
    expect(await server.stop()).toBe(0);
    expect(alive(postmaster)).toBe(false);
  } finally {
    await server.stop();
  }
});

test('after kill -9 of the server, the next start stops the PostgreSQL it left running and serves its data', async () => {
  const pg = await privateEmbeddedPostgres();
  const first = await spawnServer(pg.env);
  const orphan = await trackPostmaster(pg.dataDir);
  const { id } = await new CreditlabClient({ url: first.url, apiKey: ADMIN_KEY }).createRun({
    name: 'before the crash',
    env: 'e',
    method: 'grpo',
  });
  process.kill(first.process.pid as number, 'SIGKILL'); // the server alone, not its process group
  await first.stop();
  expect(alive(orphan)).toBe(true);

  const second = await spawnServer(pg.env);
  try {
    expect(alive(orphan)).toBe(false);
    expect(second.output()).toContain(`stopped PostgreSQL (pid ${orphan})`);
    await trackPostmaster(pg.dataDir);
    const res = await gql<{ run: { name: string } }>(
      second,
      'query($id: ID!) { run(id: $id) { name } }',
      { id },
    );
    expect(res.data?.run.name).toBe('before the crash');
  } finally {
    expect(await second.stop()).toBe(0);
  }
});

test('a second server on the same data directory refuses to start, naming the server that runs it', async () => {
  const pg = await privateEmbeddedPostgres();
  const first = await spawnServer(pg.env);
  try {
    const postmaster = await trackPostmaster(pg.dataDir);
    const second = await runServerToExit(pg.env);
    expect(second.code).toBe(1);
    expect(second.output).toContain(`Creditlab server (pid ${first.process.pid})`);
    expect(second.output).not.toMatch(/^\s+at /m); // no stack trace
    expect(alive(postmaster)).toBe(true);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
  } finally {
    expect(await first.stop()).toBe(0);
  }
});

test('a PostgreSQL that no Creditlab server recorded on the data directory is left alone, and start-up names it', async () => {
  const pg = await privateEmbeddedPostgres();
  // Started by this test as a server would, then its record removed: as if an older Creditlab
  // (which kept no record) or someone by hand had started it.
  const foreign = await startEmbeddedPostgres({ dataDir: pg.dataDir, port: pg.port });
  try {
    const pid = await trackPostmaster(pg.dataDir);
    await rm(path.join(pg.dataDir, 'creditlab.pid'));
    const { code, output } = await runServerToExit(pg.env);
    expect(code).toBe(1);
    expect(output).toContain(`a PostgreSQL is already running on it (pid ${pid}`);
    expect(output).not.toMatch(/^\s+at /m);
    expect(alive(pid)).toBe(true);
  } finally {
    await foreign.stop();
  }
});
