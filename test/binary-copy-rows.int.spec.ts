import pg from 'pg';
import { BinaryCopyRows, uuidBytes } from '../apps/server/src/rollouts/binary-copy-rows';
import { createTestDatabase } from './support/test-database';

/**
 * The binary COPY writer ingest uses for the steps projection, against PostgreSQL itself: every
 * field type it writes reads back as written, NULLs included, across the writer's buffer boundary.
 */
let pool: pg.Pool;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 1 });
});
afterAll(() => pool.end());

const COLUMNS = ['id', 'n', 'big', 'x', 'vec', 'doc'];
const RUN = '0b7e4a2c-9d3f-4e1a-8b6c-5f2d1a3e4c7b';
const INT8S = [
  0,
  -1,
  2 ** 32 + 5,
  -(2 ** 33) - 7,
  Number.MAX_SAFE_INTEGER,
  -(2n ** 63n),
  2n ** 63n - 1n,
];

test('uuid, int4, int8 (numbers and bigints), float8, bytea and jsonb read back as written', async () => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      'CREATE TEMP TABLE t (id uuid, n int4, big int8, x float8, vec bytea, doc jsonb) ON COMMIT DROP',
    );
    const rows = new BinaryCopyRows();
    const rowCount = 20_000; // several 256 KiB buffers
    for (let i = 0; i < rowCount; i++) {
      const vec = i % 3 === 0 ? undefined : new Uint8Array([i & 255, 7, 0, 255]);
      const doc = i % 2 === 0 ? undefined : JSON.stringify({ i, s: 'é\t"' });
      rows
        .row(COLUMNS.length, 16 + 4 + 8 + 8 + 4 + 64)
        .bytes(uuidBytes(RUN))
        .int4(i - 10)
        .int8(i < INT8S.length ? INT8S[i] : i % 5 === 0 ? undefined : i * 1e6)
        .float8(i % 7 === 0 ? undefined : i / 3)
        .bytes(vec)
        .jsonb(doc);
    }
    await rows.copyInto(client, 't', COLUMNS);
    const back = await client.query<{
      id: string;
      n: number;
      big: string | null;
      x: number | null;
      vec: Buffer | null;
      doc: unknown;
    }>('SELECT * FROM t ORDER BY n');
    expect(back.rows).toHaveLength(rowCount);
    back.rows.forEach((r, i) => {
      const big = i < INT8S.length ? INT8S[i] : i % 5 === 0 ? null : i * 1e6;
      expect(r.id).toBe(RUN);
      expect(r.n).toBe(i - 10);
      expect(r.big).toBe(big === null ? null : String(big));
      expect(r.x).toBe(i % 7 === 0 ? null : i / 3);
      expect(r.vec === null ? null : [...r.vec]).toEqual(i % 3 === 0 ? null : [i & 255, 7, 0, 255]);
      expect(r.doc).toEqual(i % 2 === 0 ? null : { i, s: 'é\t"' });
    });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
});
