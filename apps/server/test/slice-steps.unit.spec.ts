import type { TupleFields } from '../src/advantages/binary-copy';
import { SliceSteps } from '../src/advantages/slice-steps';

/**
 * SliceSteps walks a step_slices row's arrays step by step. The rows here are written out by hand in
 * PostgreSQL's binary array format (dimensions, has-nulls flag, element type, length, lower bound,
 * then each element's length and bytes), not produced by the server's encoder.
 */
function float8Array(xs: (number | null)[]): Buffer {
  const head = Buffer.alloc(20);
  head.writeInt32BE(1, 0);
  head.writeInt32BE(xs.includes(null) ? 1 : 0, 4);
  head.writeInt32BE(701, 8);
  head.writeInt32BE(xs.length, 12);
  head.writeInt32BE(1, 16);
  const elements = xs.map((x) => {
    if (x === null) return Buffer.from([0xff, 0xff, 0xff, 0xff]);
    const b = Buffer.alloc(12);
    b.writeInt32BE(8, 0);
    b.writeDoubleBE(x, 4);
    return b;
  });
  return Buffer.concat([head, ...elements]);
}

/** A row of the given fields (a Buffer each, null for NULL) and the step count last. */
function row(fields: (Buffer | null)[], stepCount: number): TupleFields {
  const count = Buffer.alloc(4);
  count.writeInt32BE(stepCount);
  const all = [...fields, count];
  const start = new Int32Array(all.length);
  const length = new Int32Array(all.length);
  let at = 0;
  all.forEach((f, i) => {
    start[i] = at;
    length[i] = f ? f.length : -1;
    at += f ? f.length : 0;
  });
  return { buf: Buffer.concat(all.map((f) => f ?? Buffer.alloc(0))), start, length };
}

test('each step gets each array’s element: a NULL element and a NULL column read as absent', () => {
  const fields = row([float8Array([1.5, -2, 0.25]), float8Array([null, 7, null]), null], 3);
  const seen: (number | null)[][] = [];
  new SliceSteps(3).each(fields, (s) =>
    seen.push([0, 1, 2].map((c) => (s.length[c]! < 0 ? null : s.buf.readDoubleBE(s.start[c]!)))),
  );
  expect(seen).toEqual([
    [1.5, null, null],
    [-2, 7, null],
    [0.25, null, null],
  ]);
});

test('an array whose length is not the row’s step count is refused, not read past', () => {
  const fields = row([float8Array([1, 2, 3]), float8Array([1, 2])], 3);
  expect(() => new SliceSteps(2).each(fields, () => undefined)).toThrow(
    'a step slice of 3 steps has an array of 2 elements',
  );
});
