import pg from 'pg';
import { asFewStatements } from '../apps/server/src/database/one-statement';
import { createTestDatabase } from './support/test-database';

/**
 * Statements joined into one (ingest sends a chunk's rows so, one round trip for many statements),
 * against PostgreSQL itself: each part keeps its own parameters, a child row may reference a parent
 * row another part inserts, the last part is the statement's answer, a failing part takes every
 * other part's rows with it, and parts are split where their parameters would not fit.
 */
let pool: pg.Pool;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 1 });
  await pool.query(`CREATE TABLE parent (id int PRIMARY KEY, name text NOT NULL);
    CREATE TABLE child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parent (id), note text)`);
});
afterAll(() => pool.end());
beforeEach(() => pool.query('TRUNCATE child, parent'));

const parents = (ids: number[], names: string[]): pg.QueryConfig => ({
  text: 'INSERT INTO parent (id, name) SELECT * FROM unnest($1::int[], $2::text[])',
  values: [ids, names],
});
const child = (id: number, parentId: number, note: string): pg.QueryConfig => ({
  text: 'INSERT INTO child (id, parent_id, note) VALUES ($1, $2, $3)',
  values: [id, parentId, note],
});

const rows = async (table: 'parent' | 'child') =>
  (await pool.query(`SELECT * FROM ${table} ORDER BY id`)).rows;

test('parts become one statement: own parameters, a reference to another part, the last part answers', async () => {
  const statements = asFewStatements([
    child(10, 1, 'ten'),
    parents([1, 2], ['one', 'two']),
    child(20, 2, 'twenty'),
    { text: 'SELECT $1::int + $2::int AS n', values: [40, 2] },
  ]);
  expect(statements).toHaveLength(1);
  const answer = await pool.query(statements[0] as pg.QueryConfig);
  expect(answer.rows).toEqual([{ n: 42 }]);
  expect(await rows('parent')).toEqual([
    { id: 1, name: 'one' },
    { id: 2, name: 'two' },
  ]);
  expect(await rows('child')).toEqual([
    { id: 10, parent_id: 1, note: 'ten' },
    { id: 20, parent_id: 2, note: 'twenty' },
  ]);
});

test('one failing part leaves no row of any other part', async () => {
  const [statement] = asFewStatements([
    parents([1], ['one']),
    child(10, 1, 'ten'),
    child(11, 99, 'no such parent'),
  ]);
  await expect(pool.query(statement as pg.QueryConfig)).rejects.toThrow(/foreign key/);
  expect(await rows('parent')).toEqual([]);
  expect(await rows('child')).toEqual([]);
});

test('parts are split where their parameters would pass the limit, in order', async () => {
  const parts = [parents([1], ['one']), child(10, 1, 'a'), child(11, 1, 'b'), child(12, 1, 'c')];
  const statements = asFewStatements(parts, 6); // 2 + 3 fit, the next 3 + 3 fit
  expect(statements.map((s) => s.values?.length)).toEqual([5, 6]);
  for (const s of statements) await pool.query(s);
  expect((await rows('child')).map((r: { note: string }) => r.note)).toEqual(['a', 'b', 'c']);
  expect(asFewStatements([child(1, 1, 'x')])).toEqual([child(1, 1, 'x')]);
  expect(asFewStatements([])).toEqual([]);
});

test('a part with WITH queries of its own, or a SELECT before the last, is refused, not sent wrong', () => {
  expect(() =>
    asFewStatements([parents([1], ['one']), { text: ' with x AS (SELECT 1) SELECT * FROM x' }]),
  ).toThrow(/WITH queries of its own/);
  // It would never run: PostgreSQL runs a WITH query that only reads only if the statement reads it.
  expect(() =>
    asFewStatements([{ text: "SELECT pg_notify('c', 'x')" }, parents([1], ['one'])]),
  ).toThrow(/writes nothing before the last/);
});
