import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/**
 * Rows for `COPY ... FROM STDIN` in PostgreSQL's text format: columns joined
 * by tabs, `\N` for NULL, backslash escapes in text, `\\x…` hex for bytea.
 */
export const NULL = '\\N';

export function copyText(s: string): string {
  return /[\\\t\n\r]/.test(s)
    ? s.replace(/[\\\t\n\r]/g, (c) =>
        c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
      )
    : s;
}

/** A JS number exactly as PostgreSQL reads it back into float8 (shortest round-trip form). */
export function copyNumber(x: number | undefined | null): string {
  return x === undefined || x === null ? NULL : String(x);
}

/** Writes float32 values (little-endian, as stored) as a bytea literal. */
export function copyFloat32(xs: Float32Array | undefined): string {
  if (xs === undefined) return NULL;
  return `\\\\x${Buffer.from(xs.buffer, xs.byteOffset, xs.byteLength).toString('hex')}`;
}

export function unpackFloat32(buf: Buffer): number[] {
  const out = new Array<number>(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** Streams pre-formatted rows into `table` on `client` (inside the caller's transaction). */
export async function copyRows(
  client: pg.PoolClient,
  table: string,
  columns: string[],
  rows: string[],
): Promise<void> {
  if (rows.length === 0) return;
  const sink = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  async function* chunks() {
    const batch = 512;
    for (let i = 0; i < rows.length; i += batch) yield rows.slice(i, i + batch).join('');
  }
  await pipeline(Readable.from(chunks()), sink);
}
