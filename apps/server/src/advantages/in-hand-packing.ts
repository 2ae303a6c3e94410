import { STEP_SLICE_COLUMNS, type OnSliceRow } from '../rollouts/step-slice-rows';
import { tupleEnd, type TupleFields } from './binary-copy';
import { IterationColumns, StepColumns } from './iteration-columns';
import { PACKED_INPUTS, packIteration, type PackedIteration } from './packed-columns';
import { SliceSteps } from './slice-steps';
import { byCanonicalPlace, type TrajectoryShape } from './trajectory-shape';

/**
 * Slice rows one request keeps for packing, at most: beyond it, the request packs nothing itself
 * and the background packer packs its iterations once complete. 64 MiB is about 400k steps without
 * vectors in the rows (embeddings kept in the log's bodies included), or 60k with 256-d embeddings in
 * them: an iteration-sized request fits many times over.
 */
const MAX_KEPT_BYTES = 64 * 1024 * 1024;

/** A row ingest wrote into step_slices, kept: its place in canonical order, and its bytes' span. */
export interface KeptRow {
  groupOrd: number;
  trajOrd: number;
  first: number;
  at: number;
  length: number;
}

/**
 * One iteration's kept rows, their bytes end to end in one buffer of its own: copied there as they
 * are written (a row is a view of a 256 KiB chunk of the COPY, which it would keep alive whole), and
 * moved to the packing thread whole rather than copied again, row by row.
 */
class IterationRows {
  bytes = Buffer.allocUnsafeSlow(64 * 1024);
  used = 0;
  readonly rows: KeptRow[] = [];

  add(groupOrd: number, trajOrd: number, first: number, row: Buffer): void {
    if (this.used + row.length > this.bytes.length) {
      const larger = Buffer.allocUnsafeSlow(
        Math.max(2 * this.bytes.length, this.used + row.length),
      );
      this.bytes.copy(larger, 0, 0, this.used);
      this.bytes = larger;
    }
    row.copy(this.bytes, this.used);
    this.rows.push({ groupOrd, trajOrd, first, at: this.used, length: row.length });
    this.used += row.length;
  }
}

/** What the packer reads of a slice, in the order it reads them, then the slice's step count. */
const READ_COLUMNS = new StepColumns(PACKED_INPUTS);
const FIELD_OF_READ_COLUMN = Int32Array.from(
  [...READ_COLUMNS.names, 'step_count'].map((name) => {
    const at = STEP_SLICE_COLUMNS.indexOf(name);
    if (at < 0) throw new Error(`step_slices rows lack the column ${name}`);
    return at;
  }),
);

/**
 * Packs, in the appending transaction, the iterations whose every step the request itself wrote,
 * from the step slice rows it has in hand: what the background packer would write for them
 * (iteration-packing.ts), without reading those steps back from the database. The rows go
 * through the packer's own decoder (SliceSteps, IterationColumns), as a binary COPY out of
 * step_slices would have given them, so the packed bytes are the same by construction.
 *
 * An iteration qualifies if it held no trajectories when the request first touched it (then all
 * its trajectories and steps are the request's). One appended to later is packed again by the
 * background packer when complete: readers serve a packed row only at the iteration's current
 * log position. MAX_KEPT_BYTES bounds the rows of the iterations not packed yet.
 */
export class InHandPacking {
  private readonly kept = new Map<number, IterationRows>();
  private bytes = 0;
  private gaveUp = false;

  constructor(
    /** Where an iteration left out is reported (this module stays free of Nest). */
    private readonly warn: (message: string) => void,
    /** Packs the iterations taken: here by default, or on the ingest's second thread. */
    private readonly packJobs: (jobs: PackingJob[]) => Promise<PackingOutcome[]> = packHere,
  ) {}

  /** From now on, keeps the rows of this iteration (it held no trajectories before this request). */
  watch(iteration: number): void {
    if (!this.gaveUp && !this.kept.has(iteration)) this.kept.set(iteration, new IterationRows());
  }

  /** For StepSliceRows: each row as written. */
  readonly onRow: OnSliceRow = (traj, first, row) => {
    const rows = this.kept.get(traj.iteration);
    if (!rows) return;
    this.bytes += row.length;
    if (this.bytes > MAX_KEPT_BYTES) {
      this.kept.clear();
      this.gaveUp = true;
      return;
    }
    rows.add(traj.groupOrd, traj.ord, first, row);
  };

  /** The iterations watched and not packed yet: the ones `pack` may be given. */
  get iterations(): number[] {
    return [...this.kept.keys()];
  }

  /**
   * The watched iterations `shapes` names, packed as they stand, and their rows let go: ingest packs
   * an iteration once the request has moved past it, and the rest when the request ends. `shapes`
   * gives each one's trajectories in canonical order (all of them), `inputsSeq` its log position
   * (taken now). A packed iteration that changes afterwards in the request (more steps, an outcome)
   * gets a new position, so its packed row is no longer served, and the background pass packs it
   * again. Never fails the append: an iteration whose rows do not fit its shape (a bug), or that the
   * packing thread lost, is left out with a warning, and the background pass packs it from what was
   * stored.
   */
  pack(
    shapes: Map<number, TrajectoryShape[]>,
    inputsSeq: (iteration: number) => number | null,
    /** Pack in this thread: the request waits for it either way (its end), and a hand-off adds to that. */
    here = false,
  ): Promise<PackedIteration[]> {
    const jobs: PackingJob[] = [];
    for (const [iteration, shape] of shapes) {
      const kept = this.kept.get(iteration);
      if (!kept) continue;
      this.kept.delete(iteration);
      this.bytes -= kept.used;
      const seq = inputsSeq(iteration);
      if (kept.rows.length > 0 && seq !== null)
        jobs.push({ iteration, inputsSeq: seq, shape, bytes: kept.bytes, rows: kept.rows });
    }
    if (jobs.length === 0) return Promise.resolve([]);
    return (here ? packHere(jobs) : this.packJobs(jobs)).then(
      (outcomes) =>
        outcomes.flatMap((o) => {
          if (!('failed' in o)) return [o];
          this.warn(`not packing iteration ${o.iteration} in hand: ${o.failed}`);
          return [];
        }),
      (e: unknown) => {
        this.warn(
          `not packing iterations ${jobs.map((j) => j.iteration).join(', ')} in hand: ${(e as Error).message}`,
        );
        return [];
      },
    );
  }
}

/**
 * One iteration to pack from its kept rows: plain data, so that another thread can pack it (`bytes`
 * is a buffer of its own, which a thread can be given rather than sent a copy of).
 */
export interface PackingJob {
  iteration: number;
  inputsSeq: number;
  shape: TrajectoryShape[];
  bytes: Uint8Array;
  rows: KeptRow[];
}

/** An iteration packed, or why its rows could not be. */
export type PackingOutcome = PackedIteration | { iteration: number; failed: string };

/** Packs the jobs in this thread, each on its own (one that fails leaves the others packed). */
export function packJobs(jobs: PackingJob[]): PackingOutcome[] {
  return jobs.map((j) => {
    try {
      return packRows(j);
    } catch (e) {
      return { iteration: j.iteration, failed: (e as Error).message };
    }
  });
}

const packHere = (jobs: PackingJob[]) => Promise.resolve(packJobs(jobs));

function packRows({ iteration, inputsSeq, shape, bytes, rows }: PackingJob): PackedIteration {
  rows.sort((a, b) => byCanonicalPlace(a, b) || a.first - b.first);
  const columns = new IterationColumns(shape, READ_COLUMNS);
  const slices = new SliceSteps(READ_COLUMNS.names.length);
  const all = fieldsOf(STEP_SLICE_COLUMNS.length);
  const read = fieldsOf(FIELD_OF_READ_COLUMN.length);
  let steps = 0;
  for (const { at, length } of rows) {
    const row = Buffer.from(bytes.buffer, bytes.byteOffset + at, length);
    if (tupleEnd(row, 0, all, STEP_SLICE_COLUMNS.length) !== row.length)
      throw new Error(`iteration ${iteration}: a kept step slice row is not one whole row`);
    read.buf = row;
    for (let i = 0; i < FIELD_OF_READ_COLUMN.length; i++) {
      read.start[i] = all.start[FIELD_OF_READ_COLUMN[i] as number] as number;
      read.length[i] = all.length[FIELD_OF_READ_COLUMN[i] as number] as number;
    }
    slices.each(read, (step) => {
      if (++steps > columns.stepCount)
        throw new Error(`iteration ${iteration}: more steps written than its trajectories count`);
      columns.add(step);
    });
  }
  const batch = columns.build([], []); // throws if fewer steps came than the trajectories count
  return packIteration(iteration, inputsSeq, shape, batch, {
    states: columns.states,
    actions: columns.actions,
  });
}

const fieldsOf = (n: number): TupleFields => ({
  buf: Buffer.alloc(0),
  start: new Int32Array(n),
  length: new Int32Array(n),
});
