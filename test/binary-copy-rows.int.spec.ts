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
  -Number.MAX_SAFE_INTEGER,
];
/** Values past the safe integers, written as words. */
const EXTREMES = [-(2n ** 63n), 2n ** 63n - 1n, -(2n ** 53n) - 3n, 2n ** 32n - 1n];
const words = (b: bigint) => ({
  high: Number(BigInt.asIntN(32, b >> 32n)),
  low: Number(BigInt.asUintN(32, b)),
});

test('uuid, int4, int8 (safe integers and words), float8, bytea and jsonb read back as written', async () => {
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
        .int4(i - 10);
      if (i >= INT8S.length && i < INT8S.length + EXTREMES.length)
        rows.int8Words(words(EXTREMES[i - INT8S.length] as bigint));
      else rows.int8(i < INT8S.length ? INT8S[i] : i % 5 === 0 ? undefined : i * 1e6);
      rows
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
      const extreme = EXTREMES[i - INT8S.length];
      const big =
        i < INT8S.length
          ? INT8S[i]
          : extreme !== undefined
            ? extreme
            : i % 5 === 0
              ? null
              : i * 1e6;
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

test('int8[] (as words), float8[], bytea[] and jsonb[] read back as written, NULL elements and NULL arrays included', async () => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      'CREATE TEMP TABLE a (n int4, bigs int8[], xs float8[], vecs bytea[], docs jsonb[]) ON COMMIT DROP',
    );
    const rows = new BinaryCopyRows();
    const rowCount = 3_000; // several 256 KiB buffers
    const big = (i: number, k: number) =>
      k % 4 === 3 ? undefined : BigInt(i) * 2n ** 40n - BigInt(k);
    const x = (i: number, k: number) => (k % 5 === 2 ? undefined : i / 7 - k);
    const vec = (i: number, k: number) =>
      k % 3 === 1 ? undefined : new Uint8Array([i & 255, k, 0]);
    const doc = (i: number, k: number) =>
      k % 2 === 0 ? undefined : JSON.stringify({ i, k, s: 'é"' });
    for (let i = 0; i < rowCount; i++) {
      const n = 1 + (i % 9);
      rows
        .row(5, 4 + 4 * (20 + 12 * n) + 64 * n)
        .int4(i)
        .int8WordsArray(n, (k) => {
          const b = big(i, k);
          return b === undefined ? undefined : words(b);
        })
        .float8Array(n, (k) => x(i, k));
      if (i % 10 === 0) rows.null();
      else rows.byteaArray(n, (k) => vec(i, k));
      rows.jsonbArray(n, (k) => doc(i, k));
    }
    await rows.copyInto(client, 'a', ['n', 'bigs', 'xs', 'vecs', 'docs']);
    const back = await client.query<{
      n: number;
      bigs: (string | null)[];
      xs: (number | null)[];
      vecs: (Buffer | null)[] | null;
      docs: unknown[];
    }>('SELECT n, bigs, xs, vecs, docs FROM a ORDER BY n');
    expect(back.rows).toHaveLength(rowCount);
    back.rows.forEach((r, i) => {
      const ks = Array.from({ length: 1 + (i % 9) }, (_, k) => k);
      const orNull = <T>(v: T | undefined) => (v === undefined ? null : v);
      expect(r.bigs).toEqual(ks.map((k) => orNull(big(i, k)?.toString())));
      expect(r.xs).toEqual(ks.map((k) => orNull(x(i, k))));
      expect(r.vecs === null ? null : r.vecs.map((v) => (v === null ? null : [...v]))).toEqual(
        i % 10 === 0 ? null : ks.map((k) => orNull(vec(i, k) && [...vec(i, k)!])),
      );
      expect(r.docs).toEqual(ks.map((k) => orNull(doc(i, k) && JSON.parse(doc(i, k)!))));
    });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
});

test('a number its column cannot hold is refused, not wrapped into another value', () => {
  const rows = () => new BinaryCopyRows().row(1, 12);
  for (const x of [2 ** 31, -(2 ** 31) - 1, 1.5, NaN])
    expect(() => rows().int4(x)).toThrow(`int4 column: ${x} is not a 32-bit integer`);
  expect(() => rows().int4(2 ** 31 - 1)).not.toThrow();
  expect(() => rows().int4(-(2 ** 31))).not.toThrow();
  for (const x of [2 ** 53, 0.5, Infinity])
    expect(() => rows().int8(x)).toThrow(`int8 column: ${x} is not a safe integer`);
  expect(() => rows().int8(2 ** 53 - 1)).not.toThrow();
});

test('text (UTF-8, empty, past a buffer boundary) and bool read back as written', async () => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('CREATE TEMP TABLE s (n int4, name text, flag bool) ON COMMIT DROP');
    const rows = new BinaryCopyRows();
    const rowCount = 5_000; // rows up to 1.2 kB: several 256 KiB buffers
    const name = (i: number) => (i % 11 === 0 ? '' : `trajectory ${i} é 🙂 `.repeat(1 + (i % 40)));
    for (let i = 0; i < rowCount; i++)
      rows
        .row(3, 4 + 3 * name(i).length + 1)
        .int4(i)
        .text(name(i))
        .bool(i % 3 === 0);
    await rows.copyInto(client, 's', ['n', 'name', 'flag']);
    const back = await client.query<{ n: number; name: string; flag: boolean }>(
      'SELECT * FROM s ORDER BY n',
    );
    expect(back.rows).toEqual(
      Array.from({ length: rowCount }, (_, i) => ({ n: i, name: name(i), flag: i % 3 === 0 })),
    );
    await client.query('COMMIT');
  } finally {
    client.release();
  }
});
