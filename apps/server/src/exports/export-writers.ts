import { stringify } from 'csv-stringify';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { Writable } from 'node:stream';
import type { ColumnBatch, ExportColumn } from './export-rows';

/** Writes batches of rows to a response as they come (memory: one batch at a time). */
export interface BatchWriter {
  write(batch: ColumnBatch): Promise<void>;
  end(): Promise<void>;
}

/** Waits until `out` has room again (backpressure), or it closed. */
function drained(out: Writable): Promise<void> {
  return out.writableNeedDrain
    ? new Promise((resolve) => {
        out.once('drain', resolve);
        out.once('close', resolve);
      })
    : Promise.resolve();
}

/** CSV with a header row (csv-stringify): numbers as JavaScript prints them, empty for null. */
export function csvWriter(out: Writable, columns: ExportColumn[]): BatchWriter {
  const csv = stringify({ header: true, columns: columns.map((c) => c.name) });
  csv.pipe(out);
  return {
    async write(batch) {
      const n = (batch.get(columns[0]!.name) ?? []).length;
      for (let i = 0; i < n; i++) {
        if (!csv.write(columns.map((c) => format(batch.get(c.name)?.[i]))))
          await new Promise((resolve) => csv.once('drain', resolve));
      }
      await drained(out);
    },
    end: () =>
      new Promise<void>((resolve) => {
        csv.once('end', resolve);
        csv.end();
      }),
  };
}

const format = (v: unknown) =>
  v === null || v === undefined ? '' : typeof v === 'bigint' ? String(v) : v;

/**
 * Parquet (hyparquet-writer): one row group per batch, each flushed to the response as soon as
 * it is encoded; the footer at the end.
 */
export function parquetWriter(out: Writable, columns: ExportColumn[]): BatchWriter {
  const bytes = new ByteWriter();
  const flush = async () => {
    if (bytes.index === 0) return;
    out.write(Buffer.from(bytes.buffer.slice(0, bytes.index)));
    bytes.index = 0;
    await drained(out);
  };
  const writer = new ParquetWriter({
    writer: Object.assign(bytes, { flush }),
    schema: [
      { name: 'root', num_children: columns.length },
      ...columns.map((c) => ({
        ...SCHEMA[c.type],
        name: c.name,
        repetition_type: 'OPTIONAL' as const,
      })),
    ],
  });
  return {
    async write(batch) {
      const n = (batch.get(columns[0]!.name) ?? []).length;
      if (n === 0) return;
      await writer.write({
        columnData: columns.map((c) => ({ name: c.name, data: batch.get(c.name) ?? [] })),
        rowGroupSize: n,
      });
    },
    async end() {
      await writer.finish();
      await flush();
      out.end();
    },
  };
}

const SCHEMA = {
  STRING: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  JSON: { type: 'BYTE_ARRAY', converted_type: 'JSON' },
  INT32: { type: 'INT32' },
  INT64: { type: 'INT64' },
  DOUBLE: { type: 'DOUBLE' },
  FLOAT: { type: 'FLOAT' },
} as const;
