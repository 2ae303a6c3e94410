import { stringify } from 'csv-stringify';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { Writable } from 'node:stream';
import type { ColumnBatch, ExportColumn } from './export-rows';

/** Writes batches of rows to a response as they come (memory: one batch at a time). */
export interface BatchWriter {
  write(batch: ColumnBatch): Promise<void>;
  end(): Promise<void>;
}

/** Thrown into an export whose response closed before its end: the client went away. */
export class ResponseGone extends Error {
  constructor() {
    super('the client went away before the export ended');
  }
}

/**
 * Waits for `event` of `stream`, failing with ResponseGone once `out` has closed. A client that
 * went away leaves a stream piped into its response full for good: waiting for it alone held the
 * export, with its snapshot connection and its place among the exports in progress, for ever.
 */
function until(stream: NodeJS.EventEmitter, event: string, out: Writable): Promise<void> {
  if (out.destroyed) return Promise.reject(new ResponseGone());
  return new Promise((resolve, reject) => {
    const gone = () => {
      stream.off(event, done);
      reject(new ResponseGone());
    };
    const done = () => {
      out.off('close', gone);
      resolve();
    };
    stream.once(event, done);
    out.once('close', gone);
  });
}

/** Waits until `out` has room again (backpressure); fails once it has closed. */
function drained(out: Writable): Promise<void> {
  return out.writableNeedDrain || out.destroyed ? until(out, 'drain', out) : Promise.resolve();
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
          await until(csv, 'drain', out);
      }
      await drained(out);
    },
    end: () => {
      const ended = until(csv, 'end', out);
      csv.end();
      return ended;
    },
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
