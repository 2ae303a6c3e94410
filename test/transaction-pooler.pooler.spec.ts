import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import type { RolloutBatch } from '@creditlab/estimators';
import { ensureDatabase, MIGRATIONS_DIR, runMigrations } from '@creditlab/db';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { freePort } from './support/free-port';
import { startPgBouncer } from './support/test-pgbouncer';
import { fixtureBatches } from './support/fixture-batches';
import { ADMIN_KEY, gql, spawnServer, type ServerProcess } from './support/test-server';

/**
 * Behind a transaction-mode PgBouncer, which hands each transaction (each statement outside one) to
 * whichever server connection is free: what still works and what the server says does not
 * (docs/scaling.md). Only `npm run test:pgbouncer` runs this tier (it needs the pgbouncer binary).
 */
describe('behind a transaction-mode pooler', () => {
  const binary = process.env.CREDITLAB_TEST_PGBOUNCER;
  const postgresUrl = process.env.CREDITLAB_TEST_POSTGRES_URL;
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>>;
  const pools: pg.Pool[] = [];
  const pool = (url: string, max = 2) => {
    const p = new pg.Pool({ connectionString: url, max });
    p.on('error', () => undefined);
    pools.push(p);
    return p;
  };
  /** A new database on the PostgreSQL: its URL straight, and through the pooler. */
  const newDatabase = async () => {
    const name = `test_${randomBytes(6).toString('hex')}`;
    const straight = await ensureDatabase(postgresUrl as string, name);
    const pooled = new URL(bouncer.url);
    pooled.pathname = `/${name}`;
    return { name, straight, pooled: pooled.toString() };
  };

  beforeAll(async () => {
    if (!binary || !postgresUrl)
      throw new Error(
        'run this tier with `npm run test:pgbouncer` (CREDITLAB_TEST_PGBOUNCER names the pgbouncer binary)',
      );
    // PgBouncer's own idle timeout (600 s), so a lock left on an idle server connection stays there.
    bouncer = await startPgBouncer(binary, postgresUrl, await freePort(), {
      poolMode: 'transaction',
      serverIdleTimeoutSeconds: 600,
    });
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await bouncer?.stop();
  });

  test('migrators racing through it apply each migration once, in order, and leave no lock held', async () => {
    const db = await newDatabase();
    const all = readdirSync(MIGRATIONS_DIR).sort();
    const results = await Promise.all(
      Array.from({ length: 4 }, () => runMigrations(pool(db.pooled))),
    );
    const applied = results.flatMap((r) => r.applied).sort();
    expect(applied).toEqual(all);
    for (const r of results) expect([...r.applied, ...r.alreadyApplied].sort()).toEqual(all);
    const straight = pool(db.straight);
    const recorded = await straight.query<{ name: string }>(
      'SELECT name FROM _migrations ORDER BY applied_at, name',
    );
    expect(recorded.rows.map((r) => r.name)).toEqual(all);
    // A session lock taken and released by statements the pooler sent to different server
    // connections stays held on the first, idle in the pool, and blocks every later start.
    const held = await straight.query(
      `SELECT pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
        WHERE l.locktype = 'advisory' AND d.datname = $1`,
      [db.name],
    );
    expect(held.rows).toEqual([]);
    // The next start is not kept waiting (a lock left behind would hold it for PgBouncer's 600 s).
    const next = await Promise.race([
      runMigrations(pool(db.pooled, 1)),
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new Error('the next migrator still waits after 30 s')),
          30_000,
        ).unref(),
      ),
    ]);
    expect(next).toEqual({ applied: [], alreadyApplied: all });
  });

  test('the server starts, stores and reads through it, even with prepared statements left on, and says what does not work', async () => {
    const db = await newDatabase();
    let server: ServerProcess | undefined;
    try {
      // CREDITLAB_PREPARED_STATEMENTS left on, as a lab that missed the setting would: a statement
      // named through one server connection is missing, or already there, through the next.
      server = await spawnServer({ DATABASE_URL: db.pooled });
      const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
      const batches = fixtureBatches().slice(0, 6);
      // Four runs appended to at once, so that their transactions share the pooler's connections.
      const runs = await Promise.all(
        [0, 1, 2, 3].map(async (r) => {
          const { id } = await client.createRun({ name: `pooled ${r}`, env: 'e', method: 'grpo' });
          for (const [i, [, batch]] of batches.entries())
            await client.appendEvents(id, rolloutEvents(i, batch));
          return id;
        }),
      );
      for (const id of runs) {
        const read = await gql<{ run: { iterations: { index: number; stepCount: number }[] } }>(
          server,
          `query ($id: ID!) { run(id: $id) { iterations { index stepCount } } }`,
          { id },
        );
        expect(read.errors).toBeUndefined();
        expect(read.data?.run.iterations).toEqual(
          batches.map(([, batch], index) => ({ index, stepCount: stepsOf(batch) })),
        );
      }
      // The job queue (pg-boss) works through it too: a recompute job is taken and done.
      const asked = await gql<{ recompute: { id: string; total: number } }>(
        server,
        'mutation($r: ID!) { recompute(runId: $r, method: { name: "gigpo" }) { id total } }',
        { r: runs[0] },
      );
      expect(asked.errors).toBeUndefined();
      expect(asked.data?.recompute.total).toBe(batches.length - 1); // the last is still open
      const done = await until(async () => {
        const job = await gql<{ job: { status: string; done: number } }>(
          server!,
          'query($id: ID!) { job(id: $id) { status done } }',
          { id: asked.data!.recompute.id },
        );
        return job.data?.job.status === 'COMPLETED' ? job.data.job : undefined;
      }, 120_000);
      expect(done.done).toBe(batches.length - 1);
      // Each event once, whatever was sent again after a failure.
      const stored = await pool(db.straight).query<{ n: number }>(
        `SELECT count(*)::int AS n FROM events WHERE type = 'rollouts.appended'`,
      );
      expect(stored.rows[0]?.n).toBe(
        runs.length * batches.reduce((n, [, b], i) => n + rolloutEvents(i, b).length, 0),
      );
      // Once a statement met one it never prepared, statements went unnamed: said at most once, and
      // /readyz says so while the process lives.
      const turnedOff = server.output().match(/was already there/g)?.length ?? 0;
      expect(turnedOff).toBeLessThanOrEqual(1);
      await until(
        async () => /did not reach this process's LISTEN/.test(server?.output() ?? '') || undefined,
        60_000,
      );
      expect(server.output()).toMatch(/Is DATABASE_URL a transaction-mode pooler\?/);
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(200);
      const readiness = (await ready.json()) as {
        status: string;
        warnings: Record<string, string>;
      };
      expect(readiness.status).toBe('ready');
      expect(readiness.warnings.notifications).toMatch(/^not arriving: a NOTIFY/);
      if (turnedOff) expect(readiness.warnings.preparedStatements).toMatch(/^turned off: /);
      else expect(readiness.warnings.preparedStatements).toBeUndefined();
    } finally {
      await server?.stop();
    }
  });
});

/** The first value `probe` gives, asked every 200 ms until `timeoutMs`. */
async function until<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not so after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stepsOf(batch: RolloutBatch): number {
  return batch.groups.reduce(
    (n, g) => n + g.trajectories.reduce((m, t) => m + t.steps.length, 0),
    0,
  );
}
