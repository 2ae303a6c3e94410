import { Readable } from 'node:stream';
import { readBinaryCopy, type TupleFields } from '../src/advantages/binary-copy';

/** A binary COPY stream as PostgreSQL writes it: signature, flags, header extension, tuples, trailer. */
function copyStream(rows: (Buffer | null)[][], extension = Buffer.alloc(0)): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')];
  const int32 = (x: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(x);
    return b;
  };
  const int16 = (x: number) => {
    const b = Buffer.alloc(2);
    b.writeInt16BE(x);
    return b;
  };
  parts.push(int32(0), int32(extension.length), extension);
  for (const row of rows) {
    parts.push(int16(row.length));
    for (const f of row) parts.push(...(f === null ? [int32(-1)] : [int32(f.length), f]));
  }
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

const float8 = (x: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b;
};

const ROWS = [
  [float8(1.5), Buffer.from('abc'), null],
  [float8(-2), Buffer.alloc(0), Buffer.from([1, 2, 3, 4])],
  [float8(0.25), null, Buffer.from('z')],
];

/** What the reader saw of each tuple: the float, and each other field as bytes (or null). */
async function readAll(chunks: Buffer[]): Promise<unknown[]> {
  const seen: unknown[] = [];
  await readBinaryCopy(Readable.from(chunks), 3, (f: TupleFields) => {
    const field = (i: number) =>
      (f.length[i] as number) < 0
        ? null
        : [...f.buf.subarray(f.start[i], (f.start[i] as number) + (f.length[i] as number))];
    seen.push([f.buf.readDoubleBE(f.start[0] as number), field(1), field(2)]);
  });
  return seen;
}

const expected = [
  [1.5, [...Buffer.from('abc')], null],
  [-2, [], [1, 2, 3, 4]],
  [0.25, null, [...Buffer.from('z')]],
];

test('reads every tuple, NULLs and empty fields included, in one chunk', async () => {
  expect(await readAll([copyStream(ROWS)])).toEqual(expected);
});

test('reads the same whatever the chunk boundaries (header and tuples split anywhere)', async () => {
  const whole = copyStream(ROWS, Buffer.from('ext'));
  for (let cut = 1; cut < whole.length; cut++) {
    expect(await readAll([whole.subarray(0, cut), whole.subarray(cut)])).toEqual(expected);
  }
  const bytes = [...whole].map((b) => Buffer.from([b]));
  expect(await readAll(bytes)).toEqual(expected);
});

test('refuses a stream cut before its trailer, a bad signature, or the wrong field count', async () => {
  const whole = copyStream(ROWS);
  await expect(readAll([whole.subarray(0, whole.length - 2)])).rejects.toThrow(
    'binary COPY stream ended before its trailer',
  );
  await expect(readAll([Buffer.from('not a copy stream at all')])).rejects.toThrow('bad signature');
  await expect(readAll([copyStream([[float8(1)]])])).rejects.toThrow(
    'expected 3 fields per row, got 1',
  );
});

test('a tuple spread over many chunks is joined a few times over, not once per chunk that follows its start', async () => {
  const large = Buffer.alloc(1 << 20, 7); // a checkpoint's part of 1 MiB
  const whole = copyStream([
    [float8(1), large, null],
    [float8(2), Buffer.from('after'), null],
  ]);
  const chunks: Buffer[] = [];
  for (let at = 0; at < whole.length; at += 4096) chunks.push(whole.subarray(at, at + 4096));
  const concat = Buffer.concat;
  let joined = 0;
  const counting = jest.spyOn(Buffer, 'concat').mockImplementation((list, length) => {
    const out = concat(list, length);
    joined += out.length;
    return out;
  });
  const seen: Buffer[] = [];
  try {
    await readBinaryCopy(Readable.from(chunks), 3, (f: TupleFields) => {
      seen.push(
        Buffer.from(f.buf.subarray(f.start[1], (f.start[1] as number) + (f.length[1] as number))),
      );
    });
  } finally {
    counting.mockRestore();
  }
  expect(seen.map((b) => b.length)).toEqual([large.length, 5]);
  expect(seen[0]!.equals(large) && seen[1]!.toString() === 'after').toBe(true);
  // Joined once per chunk, the 256 chunks after its start would copy about 128 MiB.
  expect(joined).toBeLessThan(4 * whole.length);
});
