import { eventBodyHash, validateEvent, type StepPayload, type ValidEvent } from '@creditlab/events';
import type pg from 'pg';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { copyFloat32, copyNumber, copyRows, copyText, NULL } from './copy-text';
import { RolloutIndex, type TrajectoryState } from './rollout-index';
import { TextDictionary } from './text-dictionary';

/** One incoming event: its 1-based position in the request and the parsed JSON value. */
export interface IncomingEvent {
  position: number;
  value: unknown;
}

export interface AppendResult {
  accepted: number;
  duplicates: number;
  lastSeq: number;
}

export interface LockedRun {
  last_seq: string;
  last_iteration: number | null;
  embedding_dim: number | null;
  status: RunStatus;
}

export type RunStatus = 'running' | 'completed' | 'failed' | 'aborted';

const STEP_FIELDS = new Set([
  'state',
  'action',
  'reward',
  'nll',
  'tokenLogprobs',
  'embedding',
  'value',
  'nextState',
  'nextValue',
]);
const STEP_COLUMNS = [
  'trajectory_id',
  'idx',
  'run_id',
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
/** Flush to the database every this many steps (or events), so memory stays bounded. */
const FLUSH_STEPS = 2000;
const FLUSH_EVENTS = 1000;

interface Pending {
  position: number;
  event: ValidEvent;
  /** eventBodyHash of the event: tells a retry (same body) from a reused id (another body). */
  hash: Buffer;
}

/** A run of consecutive steps of one trajectory inside one event. */
interface StepSlice {
  iteration: number;
  groupKey: string;
  trajectoryKey: string;
  outcome?: string;
  firstStepIndex?: number; // steps.appended states it; rollouts.appended continues the trajectory
  steps: StepPayload[];
  /** Where the slice sits in the event, for messages: `data.groups[0].trajectories[1]`. */
  path: string;
}

/**
 * One append request inside one transaction, with the run's row locked: events
 * are validated as they stream in, and written in chunks (events with their
 * step rows, the text dictionary, groups and trajectories) so a request of a
 * million steps is never held in memory. Any problem throws, and the caller
 * rolls the whole request back.
 */
export class AppendSession {
  private readonly texts: TextDictionary;
  private readonly rollouts: RolloutIndex;
  /** Event ids of this request → the body hash and line of their first appearance. */
  private readonly seenIds = new Map<string, { hash: Buffer; position: number }>();
  private pending: Pending[] = [];
  private pendingSteps = 0;
  private lastSeq: number;
  private lastIteration: number | null;
  private embeddingDim: number | null;
  private accepted = 0;
  private steps = 0;
  private duplicates = 0;
  private status: RunStatus;
  /** The run's new status, summary and finish time, when this request finishes or resumes it. */
  private statusChange:
    { status: RunStatus; summary?: Record<string, unknown>; finished: boolean } | undefined;
  /** The chunk being written while the next one is parsed and validated (at most one in flight). */
  private inflight: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    run: LockedRun,
    private readonly describe: (position: number) => string,
  ) {
    this.texts = new TextDictionary(client, runId);
    this.rollouts = new RolloutIndex(client, runId, run.last_iteration);
    this.lastSeq = Number(run.last_seq);
    this.lastIteration = run.last_iteration;
    this.embeddingDim = run.embedding_dim;
    this.status = run.status;
  }

  async add(item: IncomingEvent): Promise<void> {
    const result = validateEvent(item.value);
    if (!result.ok) this.fail(item.position, result.issue.path, result.issue.message);
    const event = result.event;
    const hash = eventBodyHash(event.type, event.data);
    const seen = this.seenIds.get(event.id);
    if (seen) {
      if (!seen.hash.equals(hash)) this.reusedId(item.position, event.id, `line ${seen.position}`);
      this.duplicates++;
      return;
    }
    this.seenIds.set(event.id, { hash, position: item.position });
    this.pending.push({ position: item.position, event, hash });
    this.pendingSteps += slicesOf(event).reduce((n, s) => n + s.steps.length, 0);
    if (this.pendingSteps >= FLUSH_STEPS || this.pending.length >= FLUSH_EVENTS)
      await this.startFlush();
  }

  async finish(): Promise<AppendResult & { steps: number }> {
    await this.startFlush();
    await this.inflight;
    const change = this.statusChange;
    await this.client.query(
      `UPDATE runs SET last_seq = $2, last_iteration = $3, embedding_dim = $4,
         status = COALESCE($5, status), summary = CASE WHEN $5::text IS NULL THEN summary ELSE $6::jsonb END,
         finished_at = CASE WHEN $5::text IS NULL THEN finished_at WHEN $7 THEN now() ELSE NULL END
       WHERE id = $1`,
      [
        this.runId,
        this.lastSeq,
        this.lastIteration,
        this.embeddingDim,
        change?.status ?? null,
        change?.summary ? JSON.stringify(change.summary) : null,
        change?.finished ?? false,
      ],
    );
    return {
      accepted: this.accepted,
      duplicates: this.duplicates,
      lastSeq: this.lastSeq,
      steps: this.steps,
    };
  }

  /**
   * Waits until no write is in flight, then not an instant longer: the one pipelining rule, so that
   * the database writes one chunk while the next is parsed, and statements stay in order on the
   * transaction's connection. A failed write surfaces here or in `finish`.
   */
  private async startFlush(): Promise<void> {
    await this.inflight;
    const batch = this.pending;
    this.pending = [];
    this.pendingSteps = 0;
    this.inflight = this.flush(batch);
    this.inflight.catch(() => undefined); // observed later, by the next await
  }

  /** Lets an in-flight write finish (ignoring its outcome), so a rollback comes after it. */
  async settle(): Promise<void> {
    await this.inflight.catch(() => undefined);
  }

  private async flush(pending: Pending[]): Promise<void> {
    const batch = await this.dropStoredDuplicates(pending);
    if (batch.length === 0) return;
    const slices = batch.flatMap((p) => slicesOf(p.event).map((s) => ({ ...p, slice: s })));
    await this.rollouts.ensure(
      slices.map(({ slice: s }) => ({
        iteration: s.iteration,
        groupKey: s.groupKey,
        trajectoryKey: s.trajectoryKey,
      })),
    );
    await this.rollouts.ensure(finishedRefs(batch), { createMissing: false });
    await this.texts.resolve(slices.flatMap(({ slice }) => slice.steps.flatMap(textsOf)));

    const stepRows: string[] = [];
    const eventRows = {
      seq: [] as number[],
      id: [] as string[],
      type: [] as string[],
      iteration: [] as (number | null)[],
      data: [] as string[],
      steps: [] as number[],
      hashes: [] as Buffer[],
    };
    const hashOf = new Map(batch.map((p) => [p.event.id, p.hash]));
    for (const { position, event } of batch) {
      this.checkStatus(position, event);
      const seq = ++this.lastSeq;
      let stepCount = 0;
      const placed: { path: string; firstStepIndex: number; stepCount: number }[] = [];
      for (const slice of slicesOf(event)) {
        const firstStepIndex = this.placeSlice(position, seq, slice, stepRows);
        placed.push({ path: slice.path, firstStepIndex, stepCount: slice.steps.length });
        stepCount += slice.steps.length;
      }
      if (event.type === 'trajectory.finished') this.finishTrajectory(position, event.data);
      if (event.type === 'run.finished') {
        this.status = event.data.status;
        this.statusChange = {
          status: event.data.status,
          summary: event.data.summary,
          finished: true,
        };
      } else if (event.type === 'run.resumed') {
        this.status = 'running';
        this.statusChange = { status: 'running', finished: false };
      }
      const iteration = 'iteration' in event.data ? event.data.iteration : null;
      if (iteration !== null)
        this.lastIteration = Math.max(this.lastIteration ?? iteration, iteration);
      eventRows.seq.push(seq);
      eventRows.id.push(event.id);
      eventRows.type.push(event.type);
      eventRows.iteration.push(iteration);
      eventRows.data.push(JSON.stringify(storedData(event, placed)));
      eventRows.steps.push(stepCount);
      eventRows.hashes.push(hashOf.get(event.id) as Buffer);
      this.steps += stepCount;
      this.accepted++;
    }
    await this.client.query(
      `INSERT INTO events (run_id, seq, id, type, iteration, data, step_count, body_hash)
       SELECT $1, * FROM unnest($2::bigint[], $3::uuid[], $4::text[], $5::int[], $6::jsonb[], $7::int[], $8::bytea[])`,
      [
        this.runId,
        eventRows.seq,
        eventRows.id,
        eventRows.type,
        eventRows.iteration,
        eventRows.data,
        eventRows.steps,
        eventRows.hashes,
      ],
    );
    await copyRows(this.client, 'steps', STEP_COLUMNS, stepRows);
    await this.rollouts.saveChanges();
  }

  /** Checks a slice against what is stored, appends its COPY rows, returns its first step index. */
  private placeSlice(position: number, seq: number, slice: StepSlice, rows: string[]): number {
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
    slice.steps.forEach((step, j) => {
      if (step.embedding) {
        this.embeddingDim ??= step.embedding.length;
        if (step.embedding.length !== this.embeddingDim) {
          this.fail(
            position,
            `${slice.path}.steps[${j}].embedding`,
            `has ${step.embedding.length} dimensions, but this run's embeddings have ${this.embeddingDim}`,
          );
        }
      }
      traj.return += step.reward;
      rows.push(this.stepRow(traj.id, first + j, seq, step));
    });
    traj.stepCount += slice.steps.length;
    if (slice.outcome) traj.outcome = slice.outcome;
    traj.changed = true;
    return first;
  }

  private stepRow(trajectoryId: string, idx: number, seq: number, s: StepPayload): string {
    const extra = Object.keys(s).filter((key) => !STEP_FIELDS.has(key));
    return (
      [
        trajectoryId,
        idx,
        this.runId,
        seq,
        this.texts.get(s.state),
        this.texts.get(s.action),
        copyNumber(s.reward),
        copyNumber(s.nll),
        copyFloat32(s.tokenLogprobs),
        copyFloat32(s.embedding),
        copyNumber(s.value),
        s.nextState === undefined ? NULL : this.texts.get(s.nextState),
        copyNumber(s.nextValue),
        extra.length
          ? copyText(JSON.stringify(Object.fromEntries(extra.map((key) => [key, s[key]]))))
          : NULL,
      ].join('\t') + '\n'
    );
  }

  private finishTrajectory(
    position: number,
    d: { iteration: number; groupId: string; trajectoryId: string; outcome: string },
  ): void {
    const traj = this.rollouts.find(d.iteration, d.trajectoryId);
    if (!traj || traj.groupKey !== d.groupId) {
      this.fail(
        position,
        'data.trajectoryId',
        `no trajectory "${d.trajectoryId}" in group "${d.groupId}" of iteration ${d.iteration}`,
      );
    }
    traj.outcome = d.outcome;
    traj.changed = true;
  }

  /**
   * Drops the events whose id is stored already with the same body (a retry: acknowledged, stored
   * once); an id stored with another body is the caller's mistake (409). Events stored before
   * body hashes existed and not yet backfilled count as the same.
   */
  private async dropStoredDuplicates(batch: Pending[]): Promise<Pending[]> {
    if (batch.length === 0) return batch;
    const stored = await this.client.query<{ id: string; seq: string; body_hash: Buffer | null }>(
      'SELECT id, seq, body_hash FROM events WHERE run_id = $1 AND id = ANY($2::uuid[])',
      [this.runId, batch.map((p) => p.event.id)],
    );
    if (stored.rowCount === 0) return batch;
    const byId = new Map(stored.rows.map((r) => [r.id, r]));
    for (const p of batch) {
      const row = byId.get(p.event.id);
      if (row?.body_hash && !row.body_hash.equals(p.hash))
        this.reusedId(p.position, p.event.id, `event ${row.seq} of this run`);
    }
    this.duplicates += byId.size;
    return batch.filter((p) => !byId.has(p.event.id));
  }

  /** Events after run.finished are refused until run.resumed reopens the run; resuming a running run is a mistake too. */
  private checkStatus(position: number, event: ValidEvent): void {
    if (event.type === 'run.resumed') {
      if (this.status !== 'running') return;
      throw new DomainError(
        ErrorCode.Conflict,
        `${this.describe(position)}: run ${this.runId} is running; run.resumed reopens a finished run`,
        { line: position, path: 'type', runStatus: this.status },
      );
    }
    if (this.status === 'running') return;
    throw new DomainError(
      ErrorCode.RunFinished,
      `${this.describe(position)}: run ${this.runId} is ${this.status}; send a run.resumed event first to add to it`,
      { line: position, path: 'type', runStatus: this.status },
    );
  }

  private reusedId(position: number, id: string, where: string): never {
    throw new DomainError(
      ErrorCode.Conflict,
      `${this.describe(position)}: id: event id ${id} is already used by ${where} with another body; give each event its own id (the same id with the same body is a retry and is stored once)`,
      { line: position, path: 'id', eventId: id },
    );
  }

  private fail(position: number, path: string, reason: string): never {
    throw new DomainError(
      ErrorCode.InvalidEvent,
      `${this.describe(position)}: ${path}: ${reason}`,
      {
        line: position,
        path,
        reason,
      },
    );
  }
}

function slicesOf(event: ValidEvent): StepSlice[] {
  if (event.type === 'steps.appended') {
    const d = event.data;
    return [
      {
        iteration: d.iteration,
        groupKey: d.groupId,
        trajectoryKey: d.trajectoryId,
        firstStepIndex: d.firstStepIndex,
        steps: d.steps,
        path: 'data',
      },
    ];
  }
  if (event.type !== 'rollouts.appended') return [];
  return event.data.groups.flatMap((g, gi) =>
    g.trajectories.map((t, ti) => ({
      iteration: event.data.iteration,
      groupKey: g.id,
      trajectoryKey: t.id,
      outcome: t.outcome,
      steps: t.steps,
      path: `data.groups[${gi}].trajectories[${ti}]`,
    })),
  );
}

function finishedRefs(batch: Pending[]) {
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

function textsOf(step: StepPayload): string[] {
  return step.nextState === undefined
    ? [step.state, step.action]
    : [step.state, step.action, step.nextState];
}

/** The event as stored: step-bearing events keep their shape, with the steps themselves in `steps`. */
function storedData(
  event: ValidEvent,
  placed: { firstStepIndex: number; stepCount: number }[],
): unknown {
  if (event.type === 'steps.appended') {
    const { steps: _steps, ...rest } = event.data;
    return { ...rest, stepCount: placed[0]?.stepCount ?? 0 };
  }
  if (event.type !== 'rollouts.appended') return event.data;
  let n = 0;
  return {
    iteration: event.data.iteration,
    groups: event.data.groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map((t) => {
        const p = placed[n++] as { firstStepIndex: number; stepCount: number };
        return {
          id: t.id,
          ...(t.outcome ? { outcome: t.outcome } : {}),
          firstStepIndex: p.firstStepIndex,
          stepCount: p.stepCount,
        };
      }),
    })),
  };
}
