import type { TupleFields } from './binary-copy';

/** An array field's header in PostgreSQL's binary format: dimensions, flags, element type, length, lower bound. */
const ARRAY_HEADER_BYTES = 20;

/**
 * Turns `step_slices` rows, read by binary COPY, back into one field set per step, as the steps
 * table used to give them: each array column's elements are walked in step order, so a reader
 * written for step rows (IterationColumns.add) reads slices unchanged. The row's fields are the
 * array columns in the reader's order, then the slice's step count. PostgreSQL sends every slice
 * as its stored row, not one row per step (what the `steps` view's unnest would cost it).
 */
export class SliceSteps {
  private readonly step: TupleFields;
  /** Per array column: where its next element's length word sits (−1: the whole column is NULL). */
  private readonly cursor: Int32Array;

  constructor(private readonly arrayColumns: number) {
    this.step = {
      buf: Buffer.alloc(0),
      start: new Int32Array(arrayColumns),
      length: new Int32Array(arrayColumns),
    };
    this.cursor = new Int32Array(arrayColumns);
  }

  /** Calls `onStep` for each step of the slice in `row`, in order; `onStep`'s argument is reused. */
  each(row: TupleFields, onStep: (step: TupleFields) => void): void {
    const { buf, start, length } = row;
    const n = buf.readInt32BE(start[this.arrayColumns] as number);
    for (let c = 0; c < this.arrayColumns; c++) {
      if ((length[c] as number) < 0) {
        this.cursor[c] = -1;
        continue;
      }
      // The array's own length, against the row's step count: never read past an array into the next field.
      const elements = buf.readInt32BE((start[c] as number) + 12);
      if (elements !== n)
        throw new Error(`a step slice of ${n} steps has an array of ${elements} elements`);
      this.cursor[c] = (start[c] as number) + ARRAY_HEADER_BYTES;
    }
    const step = this.step;
    step.buf = buf;
    for (let j = 0; j < n; j++) {
      for (let c = 0; c < this.arrayColumns; c++) {
        const at = this.cursor[c] as number;
        if (at < 0) {
          step.length[c] = -1;
          continue;
        }
        const bytes = buf.readInt32BE(at);
        step.start[c] = at + 4;
        step.length[c] = bytes;
        this.cursor[c] = at + 4 + Math.max(bytes, 0);
      }
      onStep(step);
    }
  }
}
