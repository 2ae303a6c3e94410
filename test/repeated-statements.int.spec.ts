import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import {
  preparedName,
  prepareRepeatedStatements,
  preparedStatementsOff,
} from '../apps/server/src/database/repeated-statements';
import { createTestDatabase } from './support/test-database';

/**
 * Statements a connection sends again and again are prepared on it once (ingest's statements),
 * against PostgreSQL itself: a text seen once is not, one seen again is and answers as before, a
 * connection keeps at most its share of them, and COPY, simple-protocol texts and statements with
 * a name of their own go as they are.
 */
let pool: pg.Pool;
let client: pg.PoolClient;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 1 });
  prepareRepeatedStatements(pool, { perConnection: 2 });
  client = await pool.connect();
  await client.query('CREATE TABLE t (id int PRIMARY KEY, note text)');
});
afterAll(async () => {
  client.release();
  await pool.end();
});

/** The texts prepared on this connection, as PostgreSQL lists them. */
const prepared = async () =>
  (
    await client.query<{ statement: string }>(
      'SELECT statement FROM pg_prepared_statements ORDER BY prepare_time',
    )
  ).rows.map((r) => r.statement);

const sum = (k: number) => `SELECT $1::int + ${k} AS n`;

test('a text is prepared once it is seen again, and answers as it did unprepared', async () => {
  expect((await client.query(sum(1), [1])).rows).toEqual([{ n: 2 }]);
  expect(await prepared()).toEqual([]);
  expect((await client.query({ text: sum(1), values: [2] })).rows).toEqual([{ n: 3 }]);
  expect(await prepared()).toEqual([sum(1)]);
  expect((await client.query(sum(1), [40])).rows).toEqual([{ n: 41 }]);
  expect(await prepared()).toEqual([sum(1)]);
});

test('a connection keeps at most its share; COPY, simple texts and named statements go as they are', async () => {
  for (const k of [2, 3]) for (let i = 0; i < 3; i++) await client.query(sum(k), [i]);
  expect(await prepared()).toEqual([sum(1), sum(2)]); // the share (2) was full before sum(3)
  expect((await client.query(sum(3), [1])).rows).toEqual([{ n: 4 }]);
  await client.query('SELECT 1');
  await client.query('SELECT 1');
  await client.query({ name: 'mine', text: 'SELECT $1::int AS n', values: [5] });
  await pipeline(
    Readable.from(['1\tone\n', '2\ttwo\n']),
    client.query(copyFrom('COPY t FROM STDIN')),
  );
  await pipeline(Readable.from(['3\tthree\n']), client.query(copyFrom('COPY t FROM STDIN')));
  expect(await prepared()).toEqual([sum(1), sum(2), 'SELECT $1::int AS n']);
  expect((await client.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 3 }]);
});

test('a statement that fails as a prepared one fails as it would have, and the connection goes on', async () => {
  const own = new pg.Pool({ connectionString: pool.options.connectionString, max: 1 });
  prepareRepeatedStatements(own);
  const c = await own.connect();
  try {
    const insert = 'INSERT INTO t (id, note) VALUES ($1, $2)';
    await c.query(insert, [10, 'a']);
    await c.query(insert, [11, 'b']);
    const listed = await c.query('SELECT statement FROM pg_prepared_statements');
    expect(listed.rows).toEqual([{ statement: insert }]);
    await expect(c.query(insert, [10, 'again'])).rejects.toThrow(/duplicate key/);
    await c.query(insert, [12, 'c']);
    expect((await c.query('SELECT count(*)::int AS n FROM t WHERE id >= 10')).rows).toEqual([
      { n: 3 },
    ]);
  } finally {
    c.release();
    await own.end();
  }
});

test('pool.query (which passes a callback) and texts without parameters go as they are, and answer', async () => {
  const own = new pg.Pool({ connectionString: pool.options.connectionString, max: 1 });
  prepareRepeatedStatements(own);
  try {
    const text = 'SELECT $1::int * 2 AS n';
    for (const n of [1, 2, 3])
      expect((await own.query({ text, values: [n] })).rows).toEqual([{ n: 2 * n }]);
    for (let i = 0; i < 3; i++) await own.query('SELECT 1 AS one; SELECT 2 AS two', []);
    expect((await own.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows).toEqual(
      [{ n: 0 }],
    );
  } finally {
    await own.end();
  }
});

test('a prepared statement broken under it (a value pg cannot send, a table changed by another connection) is sent unnamed from then on', async () => {
  const own = new pg.Pool({ connectionString: pool.options.connectionString, max: 1 });
  prepareRepeatedStatements(own);
  const c = await own.connect();
  try {
    await c.query('CREATE TABLE wide (a int)');
    const read = 'SELECT * FROM wide WHERE a = $1';
    await c.query(read, [1]);
    await c.query(read, [1]); // prepared now
    await client.query('ALTER TABLE wide ADD COLUMN b int'); // another connection, as another process would
    await expect(c.query(read, [1])).rejects.toMatchObject({ code: '0A000' });
    await c.query('INSERT INTO wide VALUES (1, 2)');
    expect((await c.query(read, [1])).rows).toEqual([{ a: 1, b: 2 }]);

    const echo = 'SELECT $1::text AS v';
    await c.query(echo, ['x']);
    await c.query(echo, ['y']); // prepared now
    const unsendable = {
      toPostgres: () => {
        throw new Error('cannot be sent');
      },
    };
    await expect(c.query(echo, [unsendable])).rejects.toThrow('cannot be sent');
    expect((await c.query(echo, ['z'])).rows).toEqual([{ v: 'z' }]);
  } finally {
    c.release();
    await own.end();
  }
});

test('a name already there that this connection never prepared (a shared server connection) turns naming off for the whole pool, said once', async () => {
  const shared = new pg.Pool({ connectionString: pool.options.connectionString, max: 2 });
  const said: string[] = [];
  prepareRepeatedStatements(shared, { onNotKept: (m) => said.push(m) });
  const [a, b] = [await shared.connect(), await shared.connect()];
  try {
    const text = 'SELECT $1::int * 3 AS n';
    const name = `s${createHash('sha1').update(text).digest('hex')}`;
    expect((await a.query(text, [1])).rows).toEqual([{ n: 3 }]); // seen once: not named yet
    // What a transaction-mode pooler does: another client's statement of that name is on the
    // server connection this one is lent.
    await a.query(`PREPARE ${name} AS SELECT $1::int * 3 AS n`);
    await expect(a.query(text, [2])).rejects.toMatchObject({ code: '42P05' });
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/CREDITLAB_PREPARED_STATEMENTS=off/);
    expect(preparedStatementsOff(shared)).toBe(said[0]); // what /readyz warns of
    expect(preparedStatementsOff(pool)).toBeUndefined();
    // From now on every connection of the pool sends it unnamed, the other one too.
    const names = (c: pg.PoolClient) =>
      c
        .query<{ name: string }>('SELECT name FROM pg_prepared_statements')
        .then((r) => r.rows.map((x) => x.name));
    for (const c of [a, b]) {
      expect((await c.query(text, [4])).rows).toEqual([{ n: 12 }]);
      expect((await c.query(text, [5])).rows).toEqual([{ n: 15 }]);
      expect(preparedName(c, text)).toBeUndefined();
    }
    expect(await names(b)).toEqual([]);
    expect(await names(a)).toEqual([name]); // the test's own, nothing more
    expect(said).toHaveLength(1);
  } finally {
    a.release();
    b.release();
    await shared.end();
  }
});
