import type { Outcome } from '@creditlab/estimators';
import { stepNote, type StepPayload, type ValidEvent } from '@creditlab/events';
import { setImmediate } from 'node:timers/promises';
import type pg from 'pg';
import { InHandPacking, type PackingJob, type PackingOutcome } from '../advantages/in-hand-packing';
import { packedUpserts } from '../advantages/iteration-packing';
import { asFewStatements } from '../database/one-statement';
import { sendPipelined, type CopyStep } from '../database/pipeline';
import { sendWrites } from '../database/send-statements';
import type { PackedIteration } from '../advantages/packed-columns';
import type { AppendClock } from './append-clock';
import { uuidBytes } from './binary-copy-rows';
import { embeddingsAfter, embeddingsInBody, type EmbeddingsInBody } from './event-body';
import { EVALUATION_SUCCESS, IterationTally } from './iteration-tally';
import { RolloutIndex, type RolloutRef, type TrajectoryState } from './rollout-index';
import { StepSliceRows, type ColumnRange } from './step-slice-rows';
import { TextDictionary } from './text-dictionary';

export type RunStatus = 'running' | 'completed' | 'failed' | 'aborted';

/** The run's own projection: its row's summary columns. */
export interface RunSummary {
  lastSeq: number;
  lastIteration: number | null;
  embeddingDim: number | null;
  status: RunStatus;
  summary: Record<string, unknown> | null;
  finishedAt: Date | null;
}

/**
 * The statement that writes a run's summary columns (`finish`; exported for
 * bench:ingest-database, which measures it alone).
 */
export function runSummaryUpdate(runId: string, s: RunSummary): pg.QueryConfig {
  return {
    text: `UPDATE runs SET last_seq = $2, last_iteration = $3, embedding_dim = $4, status = $5,
         summary = $6::jsonb, finished_at = $7 WHERE id = $1`,
    values: [
      runId,
      s.lastSeq,
      s.lastIteration,
      s.embeddingDim,
      s.status,
      s.summary === null ? null : JSON.stringify(s.summary),
      s.finishedAt,
    ],
  };
}

/** An event with its place in the log. */
export interface SequencedEvent {
  seq: number;
  /** Where it came from, for messages (its line in the request). */
  position: number;
  event: ValidEvent;
  /** Its body as the log stores it (event-body.ts), which may hold its steps' embeddings. */
  body: Buffer | null;
  recordedAt: Date;
}

/** Where a slice of steps went: its trajectory's first new step index and how many. */
export interface PlacedSlice {
  firstStepIndex: number;
  stepCount: number;
}

/** A run of consecutive steps of one trajectory inside one event. */
export interface StepSlice extends RolloutRef {
  outcome?: Outcome;
  /** steps.appended states it; rollouts.appended continues the trajectory. */
  firstStepIndex?: number;
  /** Its steps: objects, or a run of the event's columns (the columnar form). */
  steps: StepPayload[] | ColumnRange;
  count: number;
  /** Its first step's place among the event's steps. */
  offset: number;
  /** Where the slice sits in the event, for messages: `data.groups[0].trajectories[1]`. */
  path: string;
}

/** How a request packs the iterations it writes whole (in-hand-packing.ts). */
export interface PackInHand {
  /** Told of an iteration left out (the background pass packs it). */
  warn: (message: string) => void;
  /** Where the packing runs (the ingest's second thread); here if not given. */
  packJobs?: (jobs: PackingJob[]) => Promise<PackingOutcome[]>;
}

/** A chunk applied in memory: where each event's slices went, and its rows to write. */
export interface ProjectedChunk {
  placed: PlacedSlice[][];
  /** Writes the chunk's rows; `also` (the log's rows) go in the same statement as its last ones. */
  write: (also: pg.QueryConfig[]) => Promise<void>;
}

/** How a chunk is projected. */
export interface ChunkOptions {
  /**
   * No event follows (the request's body has ended): every iteration in hand is complete as far as
   * the request goes and is packed while this chunk is written, and the chunk's write ends the
   * request's writes too (what `finish` would send: groups, trajectories, the run's summary), in its
   * last statement, with `notice` (the notice to the run's subscribers) last of all.
   */
  last?: boolean;
  notice?: pg.QueryConfig[];
  /** `last` only: the transaction commits with the last chunk's write (nothing follows it). */
  commit?: boolean;
  /** Where the request's time goes: the last chunk's write laps the phases `finish` would. */
  clock?: AppendClock;
}

export type Fail = (position: number, path: string, reason: string) => never;

/**
 * Steps projected between two turns of the event loop. The chunk before is being written
 * meanwhile, and each of its statements waits for this thread to read PostgreSQL's answer and send
 * the next one: projecting 16,000 steps in one go (about 15 ms) held each of them that long. In
 * bench:ingest (1M steps as columns over TCP, chunks of 8,000, one pass each), yielding every 1,000
 * steps took the wait for the chunk before from 0.6 to 0.2 s per 32 MiB request, 156k → 184k steps/s.
 */
const STEPS_BETWEEN_YIELDS = 1000;

/** Events whose iteration gets a row in `iterations` (rollouts, outcomes, metrics, evaluations). */
const ITERATION_EVENTS = new Set([
  'rollouts.appended',
  'steps.appended',
  'trajectory.finished',
  'metrics.logged',
  'evaluation.logged',
]);

/**
 * The projections of one run's stream — texts, task groups, trajectories, steps, iterations and
 * the run's summary — as pure consequences of its events in seq order. Ingest applies each chunk
 * of new events in the appending transaction; a rebuild applies the stored events again, through
 * this same code, and so gets the same rows. Placement rules that depend on what is stored (step
 * indices continue, a trajectory stays in its group, one embedding size per run) are checked here
 * and reported through `fail`.
 */
export class RunProjector {
  private readonly texts: TextDictionary;
  private readonly runIdBytes: Buffer;
  private readonly rollouts: RolloutIndex;
  private readonly iterations: IterationTally;
  private readonly state: RunSummary;
  /** Packs what the appending transaction wrote whole (CREDITLAB_PACK_ITERATIONS=on-append). */
  private readonly packing: InHandPacking | undefined;
  private steps = 0;
  /** Whether the request's last writes were sent (endingParts): by the last chunk's, or by `finish`. */
  private ended = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    start: RunSummary,
    private readonly fail: Fail,
    /** Pack in hand (in-hand-packing.ts), reporting an iteration it leaves out to `warn`. */
    packInHand?: PackInHand,
  ) {
    this.packing = packInHand && new InHandPacking(packInHand.warn, packInHand.packJobs);
    this.state = { ...start };
    this.texts = new TextDictionary(client, runId);
    this.runIdBytes = uuidBytes(runId);
    this.rollouts = new RolloutIndex(client, runId, start.lastIteration);
    this.iterations = new IterationTally(client, runId, start.lastIteration);
  }

  get summary(): Readonly<RunSummary> {
    return this.state;
  }

  /** The texts of these events to look up ahead (TextDictionary.toLookUp), as ids. */
  textsToLookUp(events: readonly ValidEvent[]): string[] {
    return this.texts.toLookUp(events.flatMap(textsOf));
  }

  /** Which of those the run has stored (the lookup's answer). */
  textsStored(ids: Iterable<string>): void {
    this.texts.storedAmong(ids);
  }

  /** Texts' ids asked about before the session began, and which of them the run has stored. */
  textsAskedAhead(asked: Iterable<string>, stored: Iterable<string>): void {
    this.texts.askedAhead(asked, stored);
  }

  /** Steps projected so far. */
  get stepCount(): number {
    return this.steps;
  }

  /**
   * Applies a chunk of events (in seq order) in memory; returns each event's slices' places and the
   * chunk's rows as a write, to be sent before the next chunk's (its groups and trajectories wait for
   * `finish`: a trajectory continued across chunks is then written once). Lookups of what is stored
   * read only rows from before this projector's first chunk (the rest it holds), so they need not
   * wait for the writes (`last`: ChunkOptions).
   */
  async project(
    batch: SequencedEvent[],
    { last = false, notice = [], commit = false, clock }: ChunkOptions = {},
  ): Promise<ProjectedChunk> {
    const slices = batch.flatMap((e) => slicesOf(e.event));
    const created = await this.rollouts.ensure(slices);
    await this.rollouts.ensure(finishedRefs(batch), { createMissing: false });
    const startingEmpty = await this.iterations.touch(
      batch.flatMap((e) => (ITERATION_EVENTS.has(e.event.type) ? [iterationOf(e.event)!] : [])),
    );
    for (const i of startingEmpty) this.packing?.watch(i);
    for (const i of created.groups) this.iterations.at(i).groupCount++;
    for (const i of created.trajectories) this.iterations.at(i).trajectoryCount++;

    const rows = new StepSliceRows(this.runIdBytes, this.texts, this.packing?.onRow);
    const placed: PlacedSlice[][] = [];
    let sinceYield = 0;
    for (const e of batch) {
      placed.push(this.apply(e, rows));
      sinceYield += 1 + slicesOf(e.event).reduce((n, s) => n + s.count, 0);
      if (sinceYield >= STEPS_BETWEEN_YIELDS) {
        sinceYield = 0;
        await setImmediate();
      }
    }
    const packed = this.packInHand(
      last ? (this.packing?.iterations ?? []) : this.passedIterations(),
    );
    const newTexts = this.texts.takeStore();
    const iterations = this.iterations.takeStatements();
    // The steps by COPY at once (PostgreSQL copies them while the packing ends), then every other
    // row of the chunk in as few statements as fit, with COMMIT after them when this chunk ends the
    // request: each statement and each COPY waited for alone was a round trip (one-statement.ts,
    // pipeline.ts), and the last chunk's carry the request's last writes, which were more. Sending
    // all in one pipeline after the packing was slower on this machine's local PostgreSQL and no
    // faster through a 1 ms delay each way (docs/benchmarks.md).
    const write = async (also: pg.QueryConfig[]) => {
      const texts = await newTexts();
      const ending = last ? await this.endingParts() : undefined;
      const copying = sendPipelined(this.client, [
        ...[rows.copyStep()].filter((c) => c !== undefined),
        ...(ending?.copies ?? []),
      ]);
      copying.catch(() => undefined); // awaited below
      const packedRows = packedUpserts(this.runId, await packed);
      if (last) clock?.lap('pack');
      const parts = [...texts, ...iterations, ...packedRows, ...also];
      if (ending) parts.push(...ending.statements, ...notice);
      const rest = sendWrites(this.client, [], asFewStatements(parts), last && commit);
      // pg runs them in the order handed. Both are waited for, so that a ROLLBACK after a failure
      // cannot overtake the statements (a COPY failed on this side leaves the transaction usable);
      // the COPY's error, if any, is the first and the one told.
      const [copied, wrote] = await Promise.allSettled([copying, rest]);
      if (copied.status === 'rejected') throw copied.reason;
      if (wrote.status === 'rejected') throw wrote.reason;
      if (last) clock?.lap('rollouts');
    };
    return { placed, write };
  }

  /**
   * After every chunk's write: writes what ends the writes (endingParts), with `also` (the notice to
   * the run's subscribers) in the same statement as the last of them, and COMMIT after them if
   * `commit` — unless a chunk projected as `last` sent them with its own rows.
   */
  async finish(clock?: AppendClock, also: pg.QueryConfig[] = [], commit = false): Promise<void> {
    if (this.ended) return; // the last chunk's write sent it all
    const ending = await this.endingParts();
    clock?.lap('pack');
    const statements = asFewStatements([...ending.statements, ...also]);
    await sendWrites(this.client, ending.copies, statements, commit);
    clock?.lap('rollouts');
  }

  /**
   * What ends the writes (once): the iterations in hand not packed yet (none after a chunk projected
   * as `last`), the new groups and trajectories (by statement when few, by COPY when many), the
   * changed ones and the run's summary columns (statements). Their rows are none of a chunk's (other tables; iterations packed here were
   * not packed before), and none reads a table, so they may share a statement with the last chunk's
   * (one-statement.ts).
   */
  private async endingParts(): Promise<{ copies: CopyStep[]; statements: pg.QueryConfig[] }> {
    this.ended = true;
    const packed = await this.packInHand(this.packing?.iterations ?? [], { here: true });
    const rollouts = this.rollouts.takeWrite();
    return {
      copies: rollouts.copies,
      statements: [
        ...packedUpserts(this.runId, packed),
        ...rollouts.statements,
        runSummaryUpdate(this.runId, this.state),
      ],
    };
  }

  /**
   * The iterations in hand the stream has moved past (one after them has events): trainers send an
   * iteration's events before the next one's, so these are packed while the request goes on, as
   * PostgreSQL writes, rather than all at its end. One that changes later is packed in the background.
   */
  private passedIterations(): number[] {
    const last = this.state.lastIteration;
    return last === null ? [] : (this.packing?.iterations.filter((i) => i < last) ?? []);
  }

  /**
   * Packs them from their shapes and positions as they are now: on the ingest's second thread while
   * the request goes on, in this one at its end (nothing is left to overlap the packing with then).
   */
  private packInHand(iterations: number[], { here = false } = {}): Promise<PackedIteration[]> {
    if (!this.packing || iterations.length === 0) return Promise.resolve([]);
    return this.packing.pack(
      this.rollouts.shapes(iterations),
      (i) => this.iterations.inputsSeqOf(i),
      here,
    );
  }

  private apply(
    { seq, position, event, body, recordedAt }: SequencedEvent,
    rows: StepSliceRows,
  ): PlacedSlice[] {
    const iteration = iterationOf(event);
    const slices = slicesOf(event);
    const vectors = embeddingsInBody(
      body,
      slices.reduce((n, sl) => n + sl.count, 0),
    );
    const placed = slices.map((slice) => this.placeSlice(position, seq, slice, rows, vectors));
    if (event.type === 'trajectory.finished') this.finishTrajectory(position, event.data);
    if (event.type === 'run.finished') {
      Object.assign(this.state, {
        status: event.data.status,
        summary: event.data.summary ?? null,
        finishedAt: recordedAt,
      });
    } else if (event.type === 'run.resumed') {
      Object.assign(this.state, { status: 'running', summary: null, finishedAt: null });
    }
    if (iteration !== undefined && ITERATION_EVENTS.has(event.type)) {
      const it = this.iterations.at(iteration);
      it.lastSeq = seq;
      if (placed.length > 0 || event.type === 'trajectory.finished') it.inputsSeq = seq;
      if (event.type === 'metrics.logged') {
        it.metrics = { ...it.metrics, ...event.data.metrics };
        for (const [name, value] of Object.entries(event.data.metrics))
          this.iterations.noteMetric(name, iteration, value);
      }
      if (event.type === 'evaluation.logged') {
        it.evaluationSuccessRate = event.data.successRate;
        this.iterations.noteMetric(EVALUATION_SUCCESS, iteration, event.data.successRate);
      }
    }
    if (iteration !== undefined)
      this.state.lastIteration = Math.max(this.state.lastIteration ?? iteration, iteration);
    this.state.lastSeq = seq;
    return placed;
  }

  /** Checks a slice against what is stored and appends its COPY row. */
  private placeSlice(
    position: number,
    seq: number,
    slice: StepSlice,
    rows: StepSliceRows,
    vectors: EmbeddingsInBody | null,
  ): PlacedSlice {
    const traj = this.rollouts.find(slice.iteration, slice.trajectoryKey) as TrajectoryState;
    if (traj.groupKey !== slice.groupKey) {
      this.fail(
        position,
        slice.path,
        `trajectory "${slice.trajectoryKey}" of iteration ${slice.iteration} belongs to group "${traj.groupKey}", not "${slice.groupKey}"`,
      );
    }
    const first = traj.stepCount;
    if (slice.firstStepIndex !== undefined && slice.firstStepIndex !== first) {
      this.fail(
        position,
        `${slice.path}.firstStepIndex`,
        `trajectory "${slice.trajectoryKey}" has ${first} steps stored, so the next step index is ${first}, not ${slice.firstStepIndex}`,
      );
    }
    this.addSteps(position, seq, slice, traj, rows, vectors);
    traj.stepCount += slice.count;
    if (slice.outcome) traj.outcomeGiven = slice.outcome;
    this.rollouts.changed(traj);
    this.iterations.at(slice.iteration).stepCount += slice.count;
    this.steps += slice.count;
    return { firstStepIndex: first, stepCount: slice.count };
  }

  /**
   * The slice's row, and its rewards added to the trajectory's return (in step order, whichever
   * form, so that both forms give the same sum). A path is made only for an embedding to check.
   * Embeddings the event's body holds (`vectors`) stay there: the rows say where.
   */
  private addSteps(
    position: number,
    seq: number,
    slice: StepSlice,
    traj: TrajectoryState,
    rows: StepSliceRows,
    vectors: EmbeddingsInBody | null,
  ): void {
    const first = traj.stepCount;
    const inBody = vectors && embeddingsAfter(vectors, slice.offset);
    if (Array.isArray(slice.steps)) {
      slice.steps.forEach((step, j) => {
        if (step.embedding && !this.ofRunDimension(step.embedding))
          this.wrongDimension(position, `${slice.path}.steps[${j}].embedding`, step.embedding);
        traj.return += step.reward;
      });
      rows.objects(traj, first, seq, slice.steps, inBody);
      return;
    }
    const { columns: c, from } = slice.steps;
    const end = from + slice.count;
    const { reward, embedding } = c; // the columns' shape varies with the fields sent: read them once
    let sum = traj.return;
    for (let i = from; i < end; i++) sum += reward[i] as number;
    traj.return = sum;
    if (embedding)
      for (let i = from; i < end; i++) {
        const vector = embedding[i];
        if (vector && !this.ofRunDimension(vector)) {
          // Named as the client sent it: a step of its trajectory, or an entry of the column.
          if (c.sentAsSteps)
            this.wrongDimension(position, `${slice.path}.steps[${i - from}].embedding`, vector);
          const note = stepNote(i - from, slice.path);
          this.wrongDimension(position, `data.columns.embedding[${i}]`, vector, note);
        }
      }
    rows.columns(traj, first, seq, slice.steps, slice.count, inBody);
  }

  /** Whether an embedding has the run's dimension (fixed by the first one stored). */
  private ofRunDimension(embedding: Float32Array): boolean {
    this.state.embeddingDim ??= embedding.length;
    return embedding.length === this.state.embeddingDim;
  }

  /** Refuses an embedding of another dimension; `note` says which step a column's entry is. */
  private wrongDimension(
    position: number,
    path: string,
    embedding: Float32Array,
    note = '',
  ): never {
    return this.fail(
      position,
      path,
      `has ${embedding.length} dimensions, but this run's embeddings have ${this.state.embeddingDim}${note}`,
    );
  }

  private finishTrajectory(
    position: number,
    d: { iteration: number; groupId: string; trajectoryId: string; outcome: Outcome },
  ): void {
    const traj = this.rollouts.find(d.iteration, d.trajectoryId);
    if (!traj || traj.groupKey !== d.groupId) {
      this.fail(
        position,
        'data.trajectoryId',
        `no trajectory "${d.trajectoryId}" in group "${d.groupId}" of iteration ${d.iteration}`,
      );
    }
    traj.outcomeGiven = d.outcome;
    this.rollouts.changed(traj);
  }
}

export function iterationOf(event: ValidEvent): number | undefined {
  return 'iteration' in event.data ? event.data.iteration : undefined;
}

/**
 * The trajectory slices an event carries, in the order it names them. Kept per event: ingest asks
 * three times per event (counting a chunk's steps, loading its trajectories, placing its steps),
 * and building them (an object and a path string per trajectory) was the projector's largest
 * item in the server's profile.
 */
export function slicesOf(event: ValidEvent): StepSlice[] {
  let slices = slicesByEvent.get(event);
  if (!slices) {
    slices = computeSlices(event);
    slicesByEvent.set(event, slices);
  }
  return slices;
}

const slicesByEvent = new WeakMap<ValidEvent, StepSlice[]>();

/** The state, action and next-state texts an event's steps use. */
export function textsOf(event: ValidEvent): readonly string[] {
  if (event.type === 'rollouts.appended' && 'columns' in event.data)
    return event.data.columns.texts; // every one is some step's (the columns' check)
  const texts: string[] = [];
  for (const { steps } of slicesOf(event))
    if (Array.isArray(steps))
      for (const step of steps as StepPayload[]) {
        texts.push(step.state, step.action);
        if (step.nextState !== undefined) texts.push(step.nextState);
      }
  return texts;
}

function computeSlices(event: ValidEvent): StepSlice[] {
  if (event.type === 'steps.appended') {
    const d = event.data;
    return [
      {
        iteration: d.iteration,
        groupKey: d.groupId,
        trajectoryKey: d.trajectoryId,
        firstStepIndex: d.firstStepIndex,
        steps: d.steps,
        count: d.steps.length,
        offset: 0,
        path: 'data',
      },
    ];
  }
  if (event.type !== 'rollouts.appended') return [];
  const data = event.data;
  const path = (gi: number, ti: number) => `data.groups[${gi}].trajectories[${ti}]`;
  if ('columns' in data) {
    let from = 0;
    return data.groups.flatMap((g, gi) =>
      g.trajectories.map((t, ti) => {
        const steps = { columns: data.columns, from };
        from += t.stepCount;
        return {
          iteration: data.iteration,
          groupKey: g.id,
          trajectoryKey: t.id,
          outcome: t.outcome,
          steps,
          count: t.stepCount,
          offset: steps.from,
          path: path(gi, ti),
        };
      }),
    );
  }
  let offset = 0;
  return data.groups.flatMap((g, gi) =>
    g.trajectories.map((t, ti) => {
      const slice = {
        iteration: data.iteration,
        groupKey: g.id,
        trajectoryKey: t.id,
        outcome: t.outcome,
        steps: t.steps,
        count: t.steps.length,
        offset,
        path: path(gi, ti),
      };
      offset += slice.count;
      return slice;
    }),
  );
}

function finishedRefs(batch: SequencedEvent[]): RolloutRef[] {
  return batch.flatMap(({ event }) =>
    event.type === 'trajectory.finished'
      ? [
          {
            iteration: event.data.iteration,
            groupKey: event.data.groupId,
            trajectoryKey: event.data.trajectoryId,
          },
        ]
      : [],
  );
}
