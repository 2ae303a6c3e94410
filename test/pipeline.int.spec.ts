import pg from 'pg';
import { sendPipelined } from '../apps/server/src/database/pipeline';
import {
  notePipelineFailure,
  prepareRepeatedStatements,
  preparedName,
} from '../apps/server/src/database/repeated-statements';
import { sendWrites } from '../apps/server/src/database/send-statements';
import { cut } from './support/copy-pieces';
import { createTestDatabase } from './support/test-database';

/**
 * Several COPYs and statements sent as one write with one Sync (pipeline.ts), against PostgreSQL
 * itself: they run in order, values go as pg's own queries send them, and when one fails nothing
 * after it runs, the first error is the one reported, and the connection goes on after a ROLLBACK.
 */
let pool: pg.Pool;
let client: pg.PoolClient;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 2 });
  client = await pool.connect();
  await client.query(`CREATE TABLE piped (id int PRIMARY KEY, note text NOT NULL,
                        tags text[], doc jsonb, raw bytea)`);
});
afterAll(async () => {
  client.release();
  await pool.end();
});
beforeEach(() => client.query('TRUNCATE piped'));

const COPY = 'COPY piped (id, note) FROM STDIN';
const INSERT = 'INSERT INTO piped (id, note, tags, doc, raw) VALUES ($1, $2, $3, $4, $5)';
/** After a failed pipeline: the ROLLBACK leaves nothing stored, and the connection answers again. */
async function rolledBackAndGoingOn(): Promise<void> {
  await client.query('ROLLBACK');
  expect(await rows()).toEqual([]);
  expect((await client.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]);
}
const rows = async () =>
  (await client.query<{ id: number; note: string }>('SELECT id, note FROM piped ORDER BY id')).rows;

test('COPYs and statements run in order in one write; each reports its rows; COMMIT ends them', async () => {
  await client.query('BEGIN');
  const tags = await sendPipelined(client, [
    { copy: COPY, buffers: [Buffer.from('1\tone\n2\ttw'), Buffer.from('o\n')] },
    {
      statement: {
        text: INSERT,
        values: [3, 'three', ['a', 'b"c'], { k: [1, null] }, Buffer.from([0, 255])],
      },
    },
    // Sees the rows the COPY before it wrote: the steps run one after the other.
    { statement: { text: 'UPDATE piped SET note = note || $1 WHERE id <= 2', values: ['!'] } },
    { copy: COPY, buffers: [Buffer.from('4\tfour\n')] },
    { statement: { text: 'COMMIT' } },
  ]);
  expect(tags).toEqual(['COPY 2', 'INSERT 0 1', 'UPDATE 2', 'COPY 1', 'COMMIT']);
  expect(await rows()).toEqual([
    { id: 1, note: 'one!' },
    { id: 2, note: 'two!' },
    { id: 3, note: 'three' },
    { id: 4, note: 'four' },
  ]);
  const three = await client.query('SELECT tags, doc, raw FROM piped WHERE id = 3');
  expect(three.rows[0]).toEqual({
    tags: ['a', 'b"c'],
    doc: { k: [1, null] },
    raw: Buffer.from([0, 255]),
  });
  // Committed: a ROLLBACK now has nothing to undo.
  await client.query('ROLLBACK');
  expect(await rows()).toHaveLength(4);
});

test('a step that fails stops the rest, COMMIT included; its error is the one reported', async () => {
  await client.query('BEGIN');
  const failing = sendPipelined(client, [
    { copy: COPY, buffers: [Buffer.from('1\tone\n')] },
    { statement: { text: INSERT, values: [1, 'again', null, null, null] } }, // 23505
    { copy: COPY, buffers: [Buffer.from('2\ttwo\n')] },
    { statement: { text: 'COMMIT' } },
  ]);
  const queued = client.query('SELECT 1'); // behind the pipeline: in the failed transaction
  await expect(failing).rejects.toMatchObject({ code: '23505' });
  await expect(queued).rejects.toMatchObject({ code: '25P02' });
  await rolledBackAndGoingOn();
});

test('a COPY that fails on a row mid-way stops the steps behind it, its rows still coming dropped', async () => {
  await client.query('BEGIN');
  // About 300 kB of rows, the 9,000th of which repeats the first, then more rows, a statement, COMMIT.
  const lines = Array.from({ length: 12_000 }, (_, i) => `${i === 8999 ? 0 : i}\tnote ${i}\n`);
  const failing = sendPipelined(client, [
    { copy: COPY, buffers: cut(lines, 4096) },
    { statement: { text: INSERT, values: [99_999, 'after', null, null, null] } },
    { statement: { text: 'COMMIT' } },
  ]);
  await expect(failing).rejects.toMatchObject({ code: '23505' });
  await rolledBackAndGoingOn();
});

test('a COMMIT that finds its transaction failed is refused as not committed', async () => {
  await client.query('BEGIN');
  await client.query('INSERT INTO piped (id, note) VALUES (1, $1)', ['kept?']);
  await expect(client.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
  // PostgreSQL answers such a COMMIT with ROLLBACK and no error: sendWrites says so.
  await expect(sendWrites(client, [], [], true)).rejects.toThrow(/not committed.*ROLLBACK/);
  expect(await rows()).toEqual([]);
});

test('a value pg cannot send rejects before anything is written', async () => {
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  await expect(
    sendPipelined(client, [
      { copy: COPY, buffers: [Buffer.from('1\tone\n')] },
      { statement: { text: INSERT, values: [2, 'two', null, circular, null] } },
    ]),
  ).rejects.toThrow(/circular/i);
  expect(await rows()).toEqual([]);
});

test('statements prepared on the connection go in one round trip with COMMIT; others one by one', async () => {
  const prepared = new pg.Pool({ connectionString: pool.options.connectionString, max: 1 });
  prepareRepeatedStatements(prepared);
  const own = await prepared.connect();
  let roundTrips = 0;
  (own as unknown as { connection: pg.Connection }).connection.on('readyForQuery', () => {
    roundTrips++;
  });
  const insert = (id: number) => ({ text: INSERT, values: [id, `n${id}`, null, null, null] });
  try {
    const writes = async (id: number) => {
      await own.query('BEGIN');
      roundTrips = 0;
      await sendWrites(
        own,
        [{ copy: COPY, buffers: [Buffer.from(`${id + 1}\tc\n`)] }],
        [insert(id)],
        true,
      );
      return roundTrips;
    };
    // The process names a text the second time it is sent; from then on it is prepared here.
    expect(preparedName(own, INSERT)).toBeUndefined();
    expect(await writes(10)).toBe(3); // the COPY, the statement, COMMIT
    expect(await writes(20)).toBe(3);
    expect(preparedName(own, INSERT)).toMatch(/^s[0-9a-f]{40}$/);
    expect(await writes(30)).toBe(1);
    expect((await rows()).map((r) => r.id)).toEqual([10, 11, 20, 21, 30, 31]);
    // A failure the statement survives (a duplicate key) leaves its name in use; one of pg's or
    // Node's own (a code that is no SQLSTATE, after which pg closed the statement) does not.
    notePipelineFailure(own, [preparedName(own, INSERT)!], { code: '23505' });
    expect(preparedName(own, INSERT)).toMatch(/^s[0-9a-f]{40}$/);
    notePipelineFailure(own, [preparedName(own, INSERT)!], { code: 'ERR_INVALID_ARG_TYPE' });
    expect(preparedName(own, INSERT)).toBeUndefined();
    expect(await writes(40)).toBe(3);
  } finally {
    own.release();
    await prepared.end();
  }
});
