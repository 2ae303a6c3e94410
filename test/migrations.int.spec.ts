import { ensureDatabase, MIGRATIONS_DIR, runMigrations } from '@creditlab/db';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase } from './support/test-database';

/** Migrations are applied in order, each once, also when two servers start together. */
describe('migrations', () => {
  const pools: pg.Pool[] = [];
  afterAll(async () => Promise.all(pools.map((p) => p.end())));
  const pool = (url: string) => {
    const p = new pg.Pool({ connectionString: url, max: 2 });
    pools.push(p);
    return p;
  };
  const migrationCount = readdirSync(MIGRATIONS_DIR).length;
  /** A new database with only the migrations that came before `migration` applied. */
  const databaseBefore = async (migration: string) => {
    const db = pool(
      await ensureDatabase(
        process.env.CREDITLAB_TEST_DATABASE_URL as string,
        `test_${randomBytes(6).toString('hex')}`,
      ),
    );
    const before = mkdtempSync(path.join(tmpdir(), 'creditlab-migrations-'));
    for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n < migration))
      symlinkSync(path.join(MIGRATIONS_DIR, name), path.join(before, name));
    await runMigrations(db, before);
    return db;
  };

  test('two migrators racing on a fresh database apply each migration exactly once', async () => {
    const url = await ensureDatabase(
      process.env.CREDITLAB_TEST_DATABASE_URL as string,
      `test_${randomBytes(6).toString('hex')}`,
    );
    const all = readdirSync(MIGRATIONS_DIR).sort();
    // The lock is each migration's transaction's: the two may take turns, never both apply one.
    const [a, b] = await Promise.all([runMigrations(pool(url)), runMigrations(pool(url))]);
    expect([...a.applied, ...b.applied].sort()).toEqual(all);
    expect(a.applied.length + b.applied.length).toBe(migrationCount);
    for (const r of [a, b]) expect([...r.applied, ...r.alreadyApplied].sort()).toEqual(all);
    const rows = await pool(url).query('SELECT name FROM _migrations ORDER BY applied_at, name');
    expect(rows.rows.map((r) => r.name)).toEqual(all);
    const again = await runMigrations(pool(url));
    expect(again).toEqual({ applied: [], alreadyApplied: readdirSync(MIGRATIONS_DIR).sort() });
  });

  /** A folder of three migrations of a test's own: a table, then `second`, then another table. */
  const ownMigrations = (second: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'creditlab-migrations-'));
    const write = (name: string, sql: string) => {
      mkdirSync(path.join(dir, name));
      writeFileSync(path.join(dir, name, 'migration.sql'), sql);
    };
    write('1_first', 'CREATE TABLE first_table (x int);');
    write('2_second', second);
    write('3_third', 'CREATE TABLE third_table (x int);');
    return { dir, write };
  };
  const tables = async (db: pg.Pool) =>
    (
      await db.query<{ name: string }>(
        `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
      )
    ).rows.map((r) => r.name);
  const heldLocks = async (db: pg.Pool) =>
    (
      await db.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database =
           (SELECT oid FROM pg_database WHERE datname = current_database())`,
      )
    ).rowCount;
  const freshPool = async () =>
    pool(
      await ensureDatabase(
        process.env.CREDITLAB_TEST_DATABASE_URL as string,
        `test_${randomBytes(6).toString('hex')}`,
      ),
    );

  test("migrations run to the end whatever the database's defaults: repeatable read, racing; a statement limit shorter than one", async () => {
    const admin = pool(process.env.CREDITLAB_TEST_DATABASE_URL as string);
    const strict = await freshPool();
    const name = (await strict.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!
      .db;
    await admin.query(
      `ALTER DATABASE ${name} SET default_transaction_isolation = 'repeatable read'`,
    );
    // A snapshot taken before the lock's wait would not see the other's migration, and apply it again.
    const { dir } = ownMigrations('SELECT pg_sleep(0.3); CREATE TABLE second_table (x int);');
    const racing = await Promise.all(
      [0, 1, 2].map(() => runMigrations(pool(strict.options.connectionString as string), dir)),
    );
    expect(racing.flatMap((r) => r.applied).sort()).toEqual(['1_first', '2_second', '3_third']);
    const limited = await freshPool();
    const other = (await limited.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!
      .db;
    await admin.query(`ALTER DATABASE ${other} SET statement_timeout = '100ms'`);
    const fresh = pool(limited.options.connectionString as string); // its connections get the setting
    expect((await runMigrations(fresh, dir)).applied).toEqual(['1_first', '2_second', '3_third']);
  });

  test('a migrator kept waiting for the lock says who holds it, then goes on when it is let go', async () => {
    const db = await freshPool();
    const holder = await db.connect();
    try {
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!
        .pid;
      await holder.query(`SET application_name = 'creditlab before 2026-12-06'`);
      await holder.query('SELECT pg_advisory_lock($1)', [0x43726564]); // as that version held it
      const said: string[] = [];
      const { dir } = ownMigrations('CREATE TABLE second_table (x int);');
      const migrating = runMigrations(pool(db.options.connectionString as string), dir, {
        onWait: (line) => said.push(line),
      });
      const deadline = Date.now() + 60_000;
      while (said.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(said).toEqual([
        expect.stringMatching(
          new RegExp(
            `^waiting for the migration lock, held by PostgreSQL backend ${pid} \\(creditlab before 2026-12-06, idle`,
          ),
        ),
      ]);
      expect(await tables(db)).toEqual([]);
      await holder.query('SELECT pg_advisory_unlock($1)', [0x43726564]);
      expect((await migrating).applied).toEqual(['1_first', '2_second', '3_third']);
      expect(said).toHaveLength(1);
    } finally {
      holder.release();
    }
  });

  test('a failing migration is named, leaves nothing of itself, keeps the ones before it, and holds no lock', async () => {
    const db = await freshPool();
    const { dir } = ownMigrations(
      'CREATE TABLE second_table (x int); INSERT INTO second_table VALUES (1), (NULL); ALTER TABLE second_table ALTER x SET NOT NULL;',
    );
    await expect(runMigrations(db, dir)).rejects.toThrow(
      /^migration 2_second failed: column "x" of relation "second_table" contains null values$/,
    );
    expect(await tables(db)).toEqual(['_migrations', 'first_table']);
    const recorded = await db.query('SELECT name FROM _migrations');
    expect(recorded.rows).toEqual([{ name: '1_first' }]);
    expect(await heldLocks(db)).toBe(0);
    // The next start tries again from there (and is not kept waiting by a lock).
    await expect(runMigrations(db, dir)).rejects.toThrow(/^migration 2_second failed/);
  });

  test('a migration edited after it was applied is refused, by name, and nothing after it runs', async () => {
    const db = await freshPool();
    const { dir, write } = ownMigrations('CREATE TABLE second_table (x int);');
    expect((await runMigrations(db, dir)).applied).toEqual(['1_first', '2_second', '3_third']);
    rmSync(path.join(dir, '3_third'), { recursive: true });
    await db.query(`DROP TABLE third_table; DELETE FROM _migrations WHERE name = '3_third'`);
    rmSync(path.join(dir, '2_second'), { recursive: true });
    write('2_second', 'CREATE TABLE second_table (x bigint);');
    write('3_third', 'CREATE TABLE third_table (x int);');
    await expect(runMigrations(db, dir)).rejects.toThrow(
      /^migration 2_second changed after it was applied$/,
    );
    expect(await tables(db)).toEqual(['_migrations', 'first_table', 'second_table']);
  });

  test('upgrading a database with runs: the access migration makes a project of every project name in use', async () => {
    // the database as it was before access control
    const db = await databaseBefore('20261130020000');
    await db.query(
      `INSERT INTO runs (name, project, env, method) VALUES ('a', 'legacy lab', 'e', 'grpo'), ('b', 'default', 'e', 'grpo')`,
    );
    const upgrade = await runMigrations(db);
    expect(upgrade.applied).toContain('20261130020000_access');
    const projects = await db.query('SELECT name FROM projects ORDER BY name');
    expect(projects.rows.map((r) => r.name)).toEqual(['default', 'legacy lab']);
    await expect(
      db.query(
        `INSERT INTO runs (name, project, env, method) VALUES ('c', 'nowhere', 'e', 'grpo')`,
      ),
    ).rejects.toThrow(/runs_project_fkey/);
  });

  test("upgrading a database with metrics: each run's summary is the last value of each metric, held-out success too", async () => {
    const db = await databaseBefore('20261209000000');
    const run = await db.query<{ id: string }>(
      `INSERT INTO runs (name, project, env, method) VALUES ('a', 'default', 'e', 'grpo') RETURNING id`,
    );
    const runId = run.rows[0]!.id;
    // loss logged at 0 and 2 (the last wins, not the largest), kl at 0 only, held-out at 0 and 1.
    for (const [iteration, metrics, heldOut] of [
      [0, { loss: 3, kl: 0.5 }, 0.25],
      [1, {}, 0.5],
      [2, { loss: 1 }, null],
    ] as const)
      await db.query(
        `INSERT INTO iterations (run_id, iteration, metrics, evaluation_success_rate, last_seq)
         VALUES ($1, $2, $3, $4, 1)`,
        [runId, iteration, JSON.stringify(metrics), heldOut],
      );
    await runMigrations(db);
    const summary = await db.query(
      'SELECT name, iteration, value FROM run_metrics WHERE run_id = $1 ORDER BY name',
      [runId],
    );
    expect(summary.rows).toEqual([
      { name: 'evaluation.successRate', iteration: 1, value: 0.5 },
      { name: 'kl', iteration: 0, value: 0.5 },
      { name: 'loss', iteration: 2, value: 1 },
    ]);
  });

  test('checkpoints stored as one value before parts are cut into parts of 1 MiB, byte for byte', async () => {
    const db = await databaseBefore('20261208000000');
    const run = await db.query<{ id: string }>(
      `INSERT INTO runs (name, project, env, method) VALUES ('a', 'default', 'e', 'grpo') RETURNING id`,
    );
    const runId = run.rows[0]!.id;
    const MIB = 1024 * 1024;
    // Random bytes past two parts; one that compresses (stored before STORAGE EXTERNAL); a byte.
    const checkpoints = [randomBytes(2 * MIB + 5), Buffer.alloc(3 * MIB, 'ab'), Buffer.from([7])];
    await db.query(`ALTER TABLE checkpoints ALTER COLUMN data SET STORAGE EXTENDED`);
    for (const [iteration, data] of checkpoints.entries())
      await db.query(
        `INSERT INTO checkpoints (run_id, iteration, format, sha256, size_bytes, data)
         VALUES ($1, $2, 'test/v1', '\\x00', $3, $4)`,
        [runId, iteration, data.length, data],
      );
    expect((await runMigrations(db)).applied).toContain('20261208000000_checkpoint_parts');
    const parts = await db.query<{ iteration: number; sizes: number[]; data: Buffer }>(
      `SELECT c.iteration, array_agg(length(p.data) ORDER BY p.ord) AS sizes,
              string_agg(p.data, ''::bytea ORDER BY p.ord) AS data
       FROM checkpoints c JOIN checkpoint_parts p ON p.run_id = c.run_id AND p.upload_id = c.upload_id
       GROUP BY c.iteration ORDER BY c.iteration`,
    );
    expect(parts.rows.map((r) => r.sizes)).toEqual([[MIB, MIB, 5], [MIB, MIB, MIB], [1]]);
    for (const row of parts.rows)
      expect(row.data.equals(checkpoints[row.iteration] as Buffer)).toBe(true);
    const columns = await db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'checkpoints' AND column_name = 'data'`,
    );
    expect(columns.rows).toEqual([]);
  });

  test('events and step slices are append-only: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const db = pool(await createTestDatabase());
    const run = await db.query<{ id: string }>(
      `INSERT INTO runs (name, project, env, method) VALUES ('r', 'default', 'e', 'grpo') RETURNING id`,
    );
    const runId = run.rows[0]!.id;
    await db.query(
      `INSERT INTO events (run_id, seq, id, type, data) VALUES ($1, 1, gen_random_uuid(), 'run.created', '{}')`,
      [runId],
    );
    await expect(
      db.query(`UPDATE events SET type = 'x' WHERE run_id = $1`, [runId]),
    ).rejects.toThrow(/events is append-only: UPDATE refused/);
    await expect(db.query(`DELETE FROM events WHERE run_id = $1`, [runId])).rejects.toThrow(
      /events is append-only: DELETE refused/,
    );
    await expect(db.query('TRUNCATE events CASCADE')).rejects.toThrow(
      /append-only: TRUNCATE refused/,
    );
    await db.query(
      `INSERT INTO step_slices (run_id, iteration, group_ord, traj_ord, first_idx, seq,
      step_count, state_id, action_id, reward) VALUES ($1, 0, 0, 0, 0, 1, 1, '{1}', '{2}', '{0.5}')`,
      [runId],
    );
    await expect(db.query('UPDATE step_slices SET seq = 2')).rejects.toThrow(
      /step_slices is append-only outside a rebuild: UPDATE refused/,
    );
    await expect(db.query('DELETE FROM step_slices')).rejects.toThrow(
      /step_slices is append-only outside a rebuild: DELETE refused/,
    );
    await expect(db.query('TRUNCATE step_slices')).rejects.toThrow(
      /append-only outside a rebuild: TRUNCATE refused/,
    );
    const count = await db.query('SELECT count(*)::int AS n FROM events WHERE run_id = $1', [
      runId,
    ]);
    expect(count.rows[0].n).toBe(1);
  });

  test('the steps view gives one row per step of each slice: its index, its fields, NULLs where absent', async () => {
    const db = pool(await createTestDatabase());
    const run = await db.query<{ id: string }>(
      `INSERT INTO runs (name, project, env, method) VALUES ('r', 'default', 'e', 'grpo') RETURNING id`,
    );
    const runId = run.rows[0]!.id;
    // Two slices of one trajectory (steps 0–1 from event 4, steps 2–4 from event 9); the second has
    // no nll at all (NULL array), a value on its middle step only, and a vector on its last step.
    await db.query(
      `INSERT INTO step_slices (run_id, iteration, group_ord, traj_ord, first_idx, seq, step_count,
       state_id, action_id, reward, nll, embedding, value, extra) VALUES
     ($1, 7, 1, 2, 0, 4, 2, '{10,11}', '{20,21}', '{0,1}', '{0.1,0.2}', NULL, NULL, '{"{\\"k\\": 1}",NULL}'),
     ($1, 7, 1, 2, 2, 9, 3, '{12,13,14}', '{22,23,24}', '{2,3,4}', NULL, ARRAY[NULL, NULL, '\\x0000803f']::bytea[], '{NULL,0.5,NULL}', NULL)`,
      [runId],
    );
    const rows = await db.query(
      `SELECT idx, seq, state_id::int, action_id::int, reward, nll, embedding, value, extra FROM steps
     WHERE run_id = $1 AND iteration = 7 AND group_ord = 1 AND traj_ord = 2 ORDER BY idx`,
      [runId],
    );
    expect(rows.rows).toEqual([
      {
        idx: 0,
        seq: '4',
        state_id: 10,
        action_id: 20,
        reward: 0,
        nll: 0.1,
        embedding: null,
        value: null,
        extra: { k: 1 },
      },
      {
        idx: 1,
        seq: '4',
        state_id: 11,
        action_id: 21,
        reward: 1,
        nll: 0.2,
        embedding: null,
        value: null,
        extra: null,
      },
      {
        idx: 2,
        seq: '9',
        state_id: 12,
        action_id: 22,
        reward: 2,
        nll: null,
        embedding: null,
        value: null,
        extra: null,
      },
      {
        idx: 3,
        seq: '9',
        state_id: 13,
        action_id: 23,
        reward: 3,
        nll: null,
        embedding: null,
        value: 0.5,
        extra: null,
      },
      {
        idx: 4,
        seq: '9',
        state_id: 14,
        action_id: 24,
        reward: 4,
        nll: null,
        embedding: Buffer.from([0, 0, 0x80, 0x3f]),
        value: null,
        extra: null,
      },
    ]);
  });
});

test('the test database is PostgreSQL 15 or newer, and the version asked for', async () => {
  const c = new pg.Client({ connectionString: process.env.CREDITLAB_TEST_DATABASE_URL });
  await c.connect();
  try {
    const major =
      Number((await c.query('SHOW server_version_num')).rows[0].server_version_num) / 10000;
    expect(Math.floor(major)).toBeGreaterThanOrEqual(15);
    const asked = /postgresql\/(\d+)\//.exec(process.env.CREDITLAB_TEST_POSTGRES_BIN ?? '');
    if (asked) expect(Math.floor(major)).toBe(Number(asked[1]));
  } finally {
    await c.end();
  }
});
