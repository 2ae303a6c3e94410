import pg from 'pg';
import { copyBuffersInto } from '../apps/server/src/database/pipeline';
import { cut } from './support/copy-pieces';
import { createTestDatabase } from './support/test-database';

/**
 * A COPY sent whole with its data, not waiting for PostgreSQL to enter copy mode, against
 * PostgreSQL itself: rows split anyhow across buffers arrive, and when the statement fails —
 * before copy mode or on a row — the promise rejects with PostgreSQL's error, nothing is stored,
 * and the data still coming is dropped, so the connection answers its next statements correctly.
 */
let pool: pg.Pool;
let client: pg.PoolClient;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 2 });
  // The connection a test loses on purpose may report it after it went back to the pool: through
  // PgBouncer (npm run test:pgbouncer) the FATAL comes when PgBouncer notices, not at once.
  pool.on('error', () => undefined);
  client = await pool.connect();
  await client.query('CREATE TABLE copied (id int PRIMARY KEY, note text NOT NULL)');
});
afterAll(async () => {
  client.release();
  await pool.end();
});
beforeEach(() => client.query('TRUNCATE copied'));

const COPY = 'COPY copied (id, note) FROM STDIN';
const count = async () =>
  (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM copied')).rows[0]?.n;

const lines = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => `${from + i}\tnote ${from + i} ${'é'.repeat(i % 7)}\n`);

test('rows cut anywhere across many buffers arrive whole, and the count is PostgreSQL’s', async () => {
  const rows = lines(0, 20_000); // about 400 kB, cut into 4,093-byte pieces and an empty one
  const pieces = [...cut(rows, 4093), Buffer.alloc(0)];
  expect(await copyBuffersInto(client, COPY, pieces)).toBe(20_000);
  const sample = await client.query<{ id: number; note: string }>(
    'SELECT id, note FROM copied WHERE id IN (0, 6, 19999) ORDER BY id',
  );
  expect(sample.rows).toEqual([
    { id: 0, note: 'note 0 ' },
    { id: 6, note: `note 6 ${'é'.repeat(6)}` },
    { id: 19999, note: `note 19999 ${'é'.repeat(19999 % 7)}` },
  ]);
  expect(await count()).toBe(20_000);
});

test('a statement that fails before copy mode rejects, and its data is dropped', async () => {
  const failing = copyBuffersInto(client, 'COPY no_such_table FROM STDIN', cut(lines(0, 500), 100));
  const next = client.query<{ n: number }>('SELECT 2 AS n'); // queued behind the COPY, not awaited
  await expect(failing).rejects.toMatchObject({ code: '42P01' });
  expect((await next).rows).toEqual([{ n: 2 }]);
  expect(await copyBuffersInto(client, COPY, cut(lines(0, 3), 7))).toBe(3);
  expect(await count()).toBe(3);
});

test('a row that fails mid-COPY rejects it whole, in a transaction that then rolls back', async () => {
  await copyBuffersInto(client, COPY, cut(lines(10_000, 1), 50));
  await client.query('BEGIN');
  // The 10,000th row of this COPY repeats the key stored above, and more data follows it.
  const failing = copyBuffersInto(client, COPY, cut(lines(0, 12_000), 1000));
  await expect(failing).rejects.toMatchObject({ code: '23505' });
  await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' }); // aborted
  await client.query('ROLLBACK');
  expect(await count()).toBe(1);
});

test('data PostgreSQL cannot read rejects with its error, and the connection goes on', async () => {
  const bad = [Buffer.from('1\tone\n2\n3\tthree\n')]; // row 2 lacks a field
  await expect(copyBuffersInto(client, COPY, bad)).rejects.toMatchObject({ code: '22P04' });
  expect(await count()).toBe(0);
  expect(await copyBuffersInto(client, COPY, [Buffer.from('1\tone\n')])).toBe(1);
});

test('a connection lost before the COPY rejects it rather than hanging', async () => {
  const doomed = await pool.connect();
  doomed.on('error', () => undefined); // the pool's client reports the lost connection too
  const pid = (await doomed.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
  await client.query('SELECT pg_terminate_backend($1)', [pid]);
  await expect(copyBuffersInto(doomed, COPY, [Buffer.from('1\tone\n')])).rejects.toThrow();
  doomed.release(true);
  expect(await count()).toBe(0);
});

test('a query_timeout (the connection string may set one) is over with the COPY', async () => {
  // pg arms a timer per statement and clears it when the statement calls back: one left running
  // would fire after the COPY and act on whatever the connection does then.
  const timed = new pg.Pool({
    connectionString: pool.options.connectionString,
    query_timeout: 5000,
  });
  const other = await timed.connect();
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  try {
    const before = timers();
    expect(await copyBuffersInto(other, COPY, [Buffer.from('1\tone\n')])).toBe(1);
    expect(timers()).toBe(before);
    await expect(copyBuffersInto(other, COPY, [Buffer.from('1\tagain\n')])).rejects.toMatchObject({
      code: '23505',
    });
    expect(timers()).toBe(before);
    expect((await other.query<{ n: number }>('SELECT 3 AS n')).rows).toEqual([{ n: 3 }]);
  } finally {
    other.release();
    await timed.end();
  }
  expect(await count()).toBe(1);
});
