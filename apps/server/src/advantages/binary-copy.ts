import type { Readable } from 'node:stream';

/** Where each field of one tuple sits in `buf`: its first byte, and its length (−1 for NULL). */
export interface TupleFields {
  buf: Buffer;
  start: Int32Array;
  length: Int32Array;
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * Reads a PostgreSQL `COPY ... TO STDOUT (FORMAT binary)` stream of `fieldCount` columns and calls
 * `onTuple` once per row, in order, with where its fields sit (big-endian values, as the format
 * has them). Nothing is converted here: the caller reads each field straight into its own typed
 * arrays, so no row object or string is made per step. `fields` is reused from tuple to tuple.
 */
export async function readBinaryCopy(
  stream: Readable,
  fieldCount: number,
  onTuple: (fields: TupleFields) => void,
): Promise<void> {
  const fields: TupleFields = {
    buf: Buffer.alloc(0),
    start: new Int32Array(fieldCount),
    length: new Int32Array(fieldCount),
  };
  let rest: Buffer = Buffer.alloc(0);
  let headerRead = false;
  let ended = false;
  for await (const chunk of stream) {
    const buf: Buffer =
      rest.length > 0 ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
    let at = 0;
    if (!headerRead) {
      const body = headerEnd(buf);
      if (body < 0) {
        rest = buf;
        continue;
      }
      headerRead = true;
      at = body;
    }
    fields.buf = buf;
    for (;;) {
      const end = tupleEnd(buf, at, fields, fieldCount);
      if (end === -2) {
        ended = true;
        break;
      }
      if (end < 0) break;
      onTuple(fields);
      at = end;
    }
    rest = ended ? Buffer.alloc(0) : buf.subarray(at);
  }
  if (!ended) throw new Error('binary COPY stream ended before its trailer');
}

/** Offset of the first tuple, or −1 if the header is not complete yet. */
function headerEnd(buf: Buffer): number {
  if (buf.length < SIGNATURE.length + 8) return -1;
  if (!buf.subarray(0, SIGNATURE.length).equals(SIGNATURE))
    throw new Error('not a binary COPY stream (bad signature)');
  const extension = buf.readInt32BE(SIGNATURE.length + 4);
  const end = SIGNATURE.length + 8 + extension;
  return buf.length < end ? -1 : end;
}

/**
 * Fills `fields` for the tuple at `at` and returns the offset after it; −1 if the tuple is not
 * complete in `buf` yet, −2 at the trailer. Also reads a row ingest wrote (in-hand packing).
 */
export function tupleEnd(buf: Buffer, at: number, fields: TupleFields, fieldCount: number): number {
  if (at + 2 > buf.length) return -1;
  const count = buf.readInt16BE(at);
  if (count === -1) return -2;
  if (count !== fieldCount)
    throw new Error(`binary COPY: expected ${fieldCount} fields per row, got ${count}`);
  let p = at + 2;
  for (let i = 0; i < fieldCount; i++) {
    if (p + 4 > buf.length) return -1;
    const length = buf.readInt32BE(p);
    p += 4;
    fields.start[i] = p;
    fields.length[i] = length;
    if (length > 0) p += length;
  }
  return p > buf.length ? -1 : p;
}
