import type { Outcome } from '@creditlab/estimators';
import {
  STEP_FIELDS,
  type StepColumns,
  type StepPayload,
  type ValidEvent,
} from '@creditlab/events';
import type pg from 'pg';
import { BinaryCopyRows, uuidBytes } from './binary-copy-rows';
import { IterationTally } from './iteration-tally';
import { RolloutIndex, type RolloutRef, type TrajectoryState } from './rollout-index';
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

/** An event with its place in the log. */
export interface SequencedEvent {
  seq: number;
  /** Where it came from, for messages (its line in the request). */
  position: number;
  event: ValidEvent;
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
  /** Where the slice sits in the event, for messages: `data.groups[0].trajectories[1]`. */
  path: string;
}

/** Steps `from` to `from + count` of an event's columns. */
export interface ColumnRange {
  columns: StepColumns;
  from: number;
}

export type Fail = (position: number, path: string, reason: string) => never;

const STEP_COLUMNS = [
  'run_id',
  'iteration',
  'group_ord',
  'traj_ord',
  'idx',
  'seq',
  'state_id',
  'action_id',
  'reward',
  'nll',
  'token_logprobs',
  'embedding',
  'value',
  'next_state_id',
  'next_value',
  'extra',
];
/** What a step row's fixed-size fields take in a binary COPY: a uuid, four int4, eight 8-byte values. */
const FIXED_STEP_ROW_BYTES = 16 + 4 * 4 + 8 * 8;
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
  private steps = 0;
  private readonly columnTextIds = new WeakMap<StepColumns, bigint[]>();

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    start: RunSummary,
    private readonly fail: Fail,
  ) {
    this.state = { ...start };
    this.texts = new TextDictionary(client, runId);
    this.runIdBytes = uuidBytes(runId);
    this.rollouts = new RolloutIndex(client, runId, start.lastIteration);
    this.iterations = new IterationTally(client, runId, start.lastIteration);
  }

  get summary(): Readonly<RunSummary> {
    return this.state;
  }

  /** Steps projected so far. */
  get stepCount(): number {
    return this.steps;
  }

  /** Applies a chunk of events (in seq order) and writes its rows; returns each event's slices' places. */
  async project(batch: SequencedEvent[]): Promise<PlacedSlice[][]> {
    const slices = batch.flatMap((e) => slicesOf(e.event));
    const created = await this.rollouts.ensure(slices);
    await this.rollouts.ensure(finishedRefs(batch), { createMissing: false });
    await this.iterations.touch(
      batch.flatMap((e) => (ITERATION_EVENTS.has(e.event.type) ? [iterationOf(e.event)!] : [])),
    );
    for (const i of created.groups) this.iterations.at(i).groupCount++;
    for (const i of created.trajectories) this.iterations.at(i).trajectoryCount++;

    const rows = new BinaryCopyRows();
    const placed = batch.map((e) => this.apply(e, rows));
    await this.texts.save();
    await this.rollouts.save();
    await rows.copyInto(this.client, 'steps', STEP_COLUMNS);
    await this.iterations.save();
    return placed;
  }

  /** Writes the run's summary columns. */
  async finish(): Promise<void> {
    const s = this.state;
    await this.client.query(
      `UPDATE runs SET last_seq = $2, last_iteration = $3, embedding_dim = $4, status = $5,
         summary = $6::jsonb, finished_at = $7 WHERE id = $1`,
      [
        this.runId,
        s.lastSeq,
        s.lastIteration,
        s.embeddingDim,
        s.status,
        s.summary === null ? null : JSON.stringify(s.summary),
        s.finishedAt,
      ],
    );
  }

  private apply(
    { seq, position, event, recordedAt }: SequencedEvent,
    rows: BinaryCopyRows,
  ): PlacedSlice[] {
    const iteration = iterationOf(event);
    const placed = slicesOf(event).map((slice) => this.placeSlice(position, seq, slice, rows));
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
      if (event.type === 'metrics.logged') it.metrics = { ...it.metrics, ...event.data.metrics };
      if (event.type === 'evaluation.logged') it.evaluationSuccessRate = event.data.successRate;
    }
    if (iteration !== undefined)
      this.state.lastIteration = Math.max(this.state.lastIteration ?? iteration, iteration);
    this.state.lastSeq = seq;
    return placed;
  }

  /** Checks a slice against what is stored and appends its COPY rows. */
  private placeSlice(
    position: number,
    seq: number,
    slice: StepSlice,
    rows: BinaryCopyRows,
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
    if (Array.isArray(slice.steps)) {
      slice.steps.forEach((step, j) => {
        this.checkEmbedding(position, `${slice.path}.steps[${j}].embedding`, step.embedding);
        traj.return += step.reward;
        this.writeStepRow(rows, traj, first + j, seq, step);
      });
    } else {
      this.placeColumns(position, seq, slice.steps, slice.count, traj, first, rows);
    }
    traj.stepCount += slice.count;
    if (slice.outcome) traj.outcomeGiven = slice.outcome;
    traj.changed = true;
    this.iterations.at(slice.iteration).stepCount += slice.count;
    this.steps += slice.count;
    return { firstStepIndex: first, stepCount: slice.count };
  }

  /** One embedding's dimension against the run's (fixed by the first one stored). */
  private checkEmbedding(
    position: number,
    path: string,
    embedding: Float32Array | null | undefined,
  ) {
    if (!embedding) return;
    this.state.embeddingDim ??= embedding.length;
    if (embedding.length !== this.state.embeddingDim) {
      this.fail(
        position,
        path,
        `has ${embedding.length} dimensions, but this run's embeddings have ${this.state.embeddingDim}`,
      );
    }
  }

  /** A columnar slice's rows, straight from the columns (no step object is made). */
  private placeColumns(
    position: number,
    seq: number,
    { columns: c, from }: ColumnRange,
    count: number,
    traj: TrajectoryState,
    first: number,
    rows: BinaryCopyRows,
  ): void {
    const ids = this.textIdsOf(c);
    for (let j = 0; j < count; j++) {
      const i = from + j;
      const embedding = c.embedding?.[i] ?? undefined;
      const logprobs = c.tokenLogprobs?.[i] ?? undefined;
      this.checkEmbedding(position, `data.columns.embedding[${i}]`, embedding);
      const reward = c.reward[i] as number;
      traj.return += reward;
      const next = c.nextState?.[i] ?? -1;
      rows
        .row(
          STEP_COLUMNS.length,
          FIXED_STEP_ROW_BYTES + (logprobs?.byteLength ?? 0) + (embedding?.byteLength ?? 0),
        )
        .bytes(this.runIdBytes)
        .int4(traj.iteration)
        .int4(traj.groupOrd)
        .int4(traj.ord)
        .int4(first + j)
        .int8(seq)
        .int8(ids[c.state[i] as number])
        .int8(ids[c.action[i] as number])
        .float8(reward)
        .float8(present(c.nll?.[i]))
        .bytes(float32Bytes(logprobs))
        .bytes(float32Bytes(embedding))
        .float8(present(c.value?.[i]))
        .int8(next < 0 ? undefined : ids[next])
        .float8(present(c.nextValue?.[i]))
        .null();
    }
  }

  /** The text ids of an event's text table, each resolved once per event. */
  private textIdsOf(c: StepColumns): bigint[] {
    let ids = this.columnTextIds.get(c);
    if (!ids) {
      ids = c.texts.map((t) => this.texts.id(t));
      this.columnTextIds.set(c, ids);
    }
    return ids;
  }

  /** One `steps` row, its fields in STEP_COLUMNS order. */
  private writeStepRow(
    rows: BinaryCopyRows,
    traj: TrajectoryState,
    idx: number,
    seq: number,
    s: StepPayload,
  ): void {
    const extra = extraFieldsJson(s);
    const vectorBytes = (s.tokenLogprobs?.byteLength ?? 0) + (s.embedding?.byteLength ?? 0);
    const extraBytes = extra === undefined ? 0 : 1 + Buffer.byteLength(extra);
    rows
      .row(STEP_COLUMNS.length, FIXED_STEP_ROW_BYTES + vectorBytes + extraBytes)
      .bytes(this.runIdBytes)
      .int4(traj.iteration)
      .int4(traj.groupOrd)
      .int4(traj.ord)
      .int4(idx)
      .int8(seq)
      .int8(this.texts.id(s.state))
      .int8(this.texts.id(s.action))
      .float8(s.reward)
      .float8(s.nll)
      .bytes(float32Bytes(s.tokenLogprobs))
      .bytes(float32Bytes(s.embedding))
      .float8(s.value)
      .int8(s.nextState === undefined ? undefined : this.texts.id(s.nextState))
      .float8(s.nextValue)
      .jsonb(extra);
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
    traj.changed = true;
  }
}

export function iterationOf(event: ValidEvent): number | undefined {
  return 'iteration' in event.data ? event.data.iteration : undefined;
}

/** The trajectory slices an event carries, in the order it names them. */
export function slicesOf(event: ValidEvent): StepSlice[] {
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
        const ref = { iteration: data.iteration, groupKey: g.id, trajectoryKey: t.id };
        return { ...ref, outcome: t.outcome, steps, count: t.stepCount, path: path(gi, ti) };
      }),
    );
  }
  return data.groups.flatMap((g, gi) =>
    g.trajectories.map((t, ti) => ({
      iteration: data.iteration,
      groupKey: g.id,
      trajectoryKey: t.id,
      outcome: t.outcome,
      steps: t.steps,
      count: t.steps.length,
      path: path(gi, ti),
    })),
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

/** The step's fields beyond rollout-batch/v1, as JSON, when it has any. */
function extraFieldsJson(s: StepPayload): string | undefined {
  const extra = Object.keys(s).filter((key) => !STEP_FIELDS.has(key));
  if (extra.length === 0) return undefined;
  return JSON.stringify(Object.fromEntries(extra.map((key) => [key, s[key]])));
}

/** A column's number, or undefined where the step has none (NaN in the columnar form). */
const present = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? undefined : x);

/** A float32 vector's bytes as stored (little-endian, the platform's order on every target we run). */
function float32Bytes(xs: Float32Array | undefined): Uint8Array | undefined {
  return xs === undefined ? undefined : new Uint8Array(xs.buffer, xs.byteOffset, xs.byteLength);
}
