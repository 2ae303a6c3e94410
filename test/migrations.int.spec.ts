import { ensureDatabase, MIGRATIONS_DIR, runMigrations } from '@creditlab/db';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
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

  test('two migrators racing on a fresh database apply each migration exactly once', async () => {
    const url = await ensureDatabase(
      process.env.CREDITLAB_TEST_DATABASE_URL as string,
      `test_${randomBytes(6).toString('hex')}`,
    );
    const [a, b] = await Promise.all([runMigrations(pool(url)), runMigrations(pool(url))]);
    expect(a.applied.length + b.applied.length).toBe(migrationCount);
    expect(a.applied.length * b.applied.length).toBe(0);
    const rows = await pool(url).query('SELECT name FROM _migrations ORDER BY name');
    expect(rows.rows.map((r) => r.name)).toEqual(readdirSync(MIGRATIONS_DIR).sort());
    const again = await runMigrations(pool(url));
    expect(again).toEqual({ applied: [], alreadyApplied: readdirSync(MIGRATIONS_DIR).sort() });
  });

  test('upgrading a database with runs: the access migration makes a project of every project name in use', async () => {
    const db = pool(
      await ensureDatabase(
        process.env.CREDITLAB_TEST_DATABASE_URL as string,
        `test_${randomBytes(6).toString('hex')}`,
      ),
    );
    // the database as it was before access control: only the migrations that came before it
    const before = mkdtempSync(path.join(tmpdir(), 'creditlab-migrations-'));
    for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n < '20261130020000'))
      symlinkSync(path.join(MIGRATIONS_DIR, name), path.join(before, name));
    await runMigrations(db, before);
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

  test('events and steps are append-only: UPDATE, DELETE and TRUNCATE are refused', async () => {
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
    await expect(db.query('DELETE FROM steps')).resolves.toBeDefined(); // no rows: the row trigger never fires
    const count = await db.query('SELECT count(*)::int AS n FROM events WHERE run_id = $1', [
      runId,
    ]);
    expect(count.rows[0].n).toBe(1);
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
