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
  let headerRead = false;
  let ended = false;
  /** Calls `onTuple` for each whole tuple in `buf`; returns what is left of it: a tuple's start. */
  const consume = (buf: Buffer): Buffer => {
    let at = 0;
    if (!headerRead) {
      const body = headerEnd(buf);
      if (body < 0) return buf;
      headerRead = true;
      at = body;
    }
    fields.buf = buf;
    for (;;) {
      const end = tupleEnd(buf, at, fields, fieldCount);
      if (end === -2) {
        ended = true;
        return Buffer.alloc(0);
      }
      if (end < 0) return buf.subarray(at);
      onTuple(fields);
      at = end;
    }
  };
  // A tuple larger than a chunk (a checkpoint's part, a packed iteration) arrives over many: the
  // chunks after its start wait until they are as long as what came before, then are joined once,
  // so that each byte is copied a few times rather than once per chunk that follows it. While they
  // are joined a large tuple is held about four times over (what came, what waited, the join).
  let rest: Buffer = Buffer.alloc(0);
  let waiting: Buffer[] = [];
  let waitingBytes = 0;
  for await (const chunk of stream) {
    if (ended) continue;
    waiting.push(chunk as Buffer);
    waitingBytes += (chunk as Buffer).length;
    if (waitingBytes < rest.length) continue;
    rest = consume(
      rest.length > 0 || waiting.length > 1 ? Buffer.concat([rest, ...waiting]) : waiting[0]!,
    );
    waiting = [];
    waitingBytes = 0;
  }
  if (waiting.length > 0 && !ended) consume(Buffer.concat([rest, ...waiting]));
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
