import type pg from 'pg';
import { copyBuffersInto, type CopyStep } from '../database/pipeline';

/** `PGCOPY\n\377\r\n\0`, flags 0, no header extension: PostgreSQL's binary COPY header. */
const HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);
const TRAILER = Buffer.from([0xff, 0xff]);
const CHUNK_BYTES = 256 * 1024;
/** The jsonb binary format's version byte, followed by the JSON text. */
const JSONB_VERSION = 1;
/** Element type oids, which an array field names (PostgreSQL checks them against the column's). */
const OID = { int8: 20, float8: 701, bytea: 17, jsonb: 3802 } as const;
/** An array field's header: dimensions, has-nulls flag, element type, length, lower bound. */
const ARRAY_HEADER_BYTES = 20;

/** An int8 as its two 32-bit words, high (signed) and low (unsigned): written with no BigInt. */
export interface Int8Words {
  high: number;
  low: number;
}

/** What an array field of `n` elements takes after its length word, given its elements' bytes. */
export const arrayBytes = (n: number, elementBytes: number) =>
  ARRAY_HEADER_BYTES + 4 * n + elementBytes;

/**
 * Rows for `COPY … FROM STDIN (FORMAT binary)`, written field by field into large buffers.
 * Binary rather than text because ingest writes every step once through here: numbers go as
 * their 8 bytes (no decimal formatting on our side, no parsing on PostgreSQL's), vectors as their
 * bytes (no hex), and no per-field string is made. The caller writes each row's fields in the
 * table's column order, with the PostgreSQL type the column has.
 */
export class BinaryCopyRows {
  private readonly chunks: Buffer[] = [HEADER];
  private buf: Buffer;
  /**
   * The same bytes for the fixed-size fields: a DataView's setters are compiled inline, where
   * Buffer's writeInt32BE and writeDoubleBE are calls that check their arguments (an order of
   * magnitude apart per field on Node 20), and ingest writes several such fields per step.
   */
  private view: DataView;
  private at = 0;
  private rowStart = 0;
  private rowCount = 0;

  /** `chunkBytes`: the size of the buffers rows are written into (a few rows need less than steps). */
  constructor(private readonly chunkBytes = CHUNK_BYTES) {
    this.buf = Buffer.allocUnsafe(chunkBytes);
    this.view = viewOf(this.buf);
  }

  get rows(): number {
    return this.rowCount;
  }

  /** Starts a row of `fields` fields; `maxBytes` bounds what its fields will take. */
  row(fields: number, maxBytes: number): this {
    this.reserve(2 + fields * 4 + maxBytes);
    this.rowStart = this.at;
    this.view.setInt16(this.at, fields);
    this.at += 2;
    this.rowCount++;
    return this;
  }

  /**
   * The bytes of the row written last, as COPY will send them. A view, not a copy: it stays valid,
   * since a full buffer is set aside for a new one (and no row is written after copyInto).
   */
  lastRow(): Buffer {
    return this.buf.subarray(this.rowStart, this.at);
  }

  int4(x: number): this {
    // A DataView wraps what does not fit (2^31 would be stored as -2^31): refuse it instead.
    if ((x | 0) !== x) throw new RangeError(`int4 column: ${x} is not a 32-bit integer`);
    this.view.setInt32(this.at, 4);
    this.view.setInt32(this.at + 4, x);
    this.at += 8;
    return this;
  }

  /** int8 from a safe integer (as its two 32-bit words: no BigInt made per row), or NULL. */
  int8(x: number | undefined): this {
    if (x === undefined) return this.null();
    if (!Number.isSafeInteger(x)) throw new RangeError(`int8 column: ${x} is not a safe integer`);
    return this.words(Math.floor(x / 2 ** 32), x >>> 0);
  }

  /** int8 from its two 32-bit words, or NULL for a missing value. */
  int8Words(x: Int8Words | undefined): this {
    return x === undefined ? this.null() : this.words(x.high, x.low);
  }

  private words(high: number, low: number): this {
    this.view.setInt32(this.at, 8);
    this.view.setInt32(this.at + 4, high);
    this.view.setUint32(this.at + 8, low);
    this.at += 12;
    return this;
  }

  /** float8, or NULL for a missing value. */
  float8(x: number | undefined | null): this {
    if (x === undefined || x === null) return this.null();
    this.view.setInt32(this.at, 8);
    this.view.setFloat64(this.at + 4, x);
    this.at += 12;
    return this;
  }

  /** A uuid, bytea or any field already in its binary form (NULL when missing). */
  bytes(x: Uint8Array | undefined | null): this {
    if (x === undefined || x === null) return this.null();
    this.view.setInt32(this.at, x.byteLength);
    this.buf.set(x, this.at + 4);
    this.at += 4 + x.byteLength;
    return this;
  }

  /** text as UTF-8 (a row's `maxBytes` counts 3 bytes per UTF-16 unit for it: the most it takes). */
  text(x: string): this {
    const length = this.buf.write(x, this.at + 4, 'utf8');
    this.view.setInt32(this.at, length);
    this.at += 4 + length;
    return this;
  }

  bool(x: boolean): this {
    this.view.setInt32(this.at, 1);
    this.view.setUint8(this.at + 4, x ? 1 : 0);
    this.at += 5;
    return this;
  }

  /** jsonb from its JSON text (NULL when missing). */
  jsonb(json: string | undefined): this {
    if (json === undefined) return this.null();
    const length = this.buf.write(json, this.at + 5, 'utf8');
    this.view.setInt32(this.at, length + 1);
    this.view.setUint8(this.at + 4, JSONB_VERSION);
    this.at += 5 + length;
    return this;
  }

  null(): this {
    this.view.setInt32(this.at, -1);
    this.at += 4;
    return this;
  }

  /** int8[] of `n` elements given as words, `get(i)` each (undefined: a NULL element). */
  int8WordsArray(n: number, get: (i: number) => Int8Words | undefined): this {
    const start = this.arrayStart(n, OID.int8);
    for (let i = 0; i < n; i++) this.int8Words(get(i));
    return this.fieldEnd(start);
  }

  /** float8[] of `n` elements, `get(i)` each (undefined: a NULL element). */
  float8Array(n: number, get: (i: number) => number | undefined): this {
    const start = this.arrayStart(n, OID.float8);
    for (let i = 0; i < n; i++) this.float8(get(i));
    return this.fieldEnd(start);
  }

  /** bytea[] of `n` elements, `get(i)` each (undefined: a NULL element). */
  byteaArray(n: number, get: (i: number) => Uint8Array | undefined): this {
    const start = this.arrayStart(n, OID.bytea);
    for (let i = 0; i < n; i++) this.bytes(get(i));
    return this.fieldEnd(start);
  }

  /** jsonb[] of `n` elements from their JSON texts, `get(i)` each (undefined: a NULL element). */
  jsonbArray(n: number, get: (i: number) => string | undefined): this {
    const start = this.arrayStart(n, OID.jsonb);
    for (let i = 0; i < n; i++) this.jsonb(get(i));
    return this.fieldEnd(start);
  }

  /**
   * Opens an array field (its length is written by fieldEnd). The has-nulls flag may stay 0:
   * PostgreSQL reads each element's length and finds the NULLs itself.
   */
  private arrayStart(n: number, oid: number): number {
    const start = this.at;
    this.view.setInt32(start + 4, 1);
    this.view.setInt32(start + 8, 0);
    this.view.setInt32(start + 12, oid);
    this.view.setInt32(start + 16, n);
    this.view.setInt32(start + 20, 1);
    this.at += 4 + ARRAY_HEADER_BYTES;
    return start;
  }

  private fieldEnd(start: number): this {
    this.view.setInt32(start, this.at - start - 4);
    return this;
  }

  /**
   * Copies the rows written so far into `table` (inside the caller's transaction): the statement and
   * the rows in one write, the rows being in memory already (pipeline.ts).
   */
  async copyInto(client: pg.PoolClient, table: string, columns: readonly string[]): Promise<void> {
    const copy = this.copyStep(table, columns);
    if (copy) await copyBuffersInto(client, copy.copy, copy.buffers);
  }

  /** The COPY of the rows written so far into `table`, for a pipeline (pipeline.ts); none if no rows. */
  copyStep(table: string, columns: readonly string[]): CopyStep | undefined {
    if (this.rowCount === 0) return undefined;
    this.seal();
    this.chunks.push(TRAILER);
    return { copy: binaryCopySql(table, columns), buffers: this.chunks };
  }

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    this.seal();
    this.buf = Buffer.allocUnsafe(Math.max(this.chunkBytes, bytes));
    this.view = viewOf(this.buf);
  }

  private seal(): void {
    if (this.at > 0) this.chunks.push(this.buf.subarray(0, this.at));
    this.at = 0;
  }
}

const viewOf = (buf: Buffer) => new DataView(buf.buffer, buf.byteOffset, buf.byteLength);

/** The COPY statement the rows are written with (bench:ingest-database replays it too). */
export function binaryCopySql(table: string, columns: readonly string[]): string {
  return `COPY ${table} (${columns.join(', ')}) FROM STDIN (FORMAT binary)`;
}

/** A uuid's 16 bytes, for a binary COPY field. */
export function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replace(/-/g, ''), 'hex');
}
