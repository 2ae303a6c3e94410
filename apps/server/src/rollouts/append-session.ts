import type { ValidEvent } from '@creditlab/events';
import type pg from 'pg';
import { runNotice } from '../database/run-notice';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { sameEvent } from './event-digest';
import type { AppendClock } from './append-clock';
import type { EventOrigin } from './event-origin';
import type { FirstEventLookup } from './first-event-lookup';
import { eventsInsert, type EventRow } from './events-insert';
import { checkEvent, isIssue, type PreparedEvent } from './prepare-event';
import {
  RunProjector,
  slicesOf,
  type PackInHand,
  type PlacedSlice,
  type RunStatus,
  type RunSummary,
  type SequencedEvent,
} from './run-projector';

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

/**
 * The events of a chunk already in the log (retries): the run id and the chunk's event ids. Exported
 * for bench:ingest-database, which measures it alone.
 */
export const STORED_EVENT_IDS_SQL =
  'SELECT id, seq, body_hash FROM events WHERE run_id = $1 AND id = ANY($2::uuid[])';

/**
 * The same, with which of the chunk's texts (ids, $3) the run has stored (`text` set on those rows):
 * the texts' lookup in the duplicate check's round trip rather than one of its own before the
 * chunk's COPY (TextDictionary.toLookUp).
 */
const STORED_EVENTS_AND_TEXTS_SQL = `SELECT id::text AS id, seq, body_hash, false AS text FROM events WHERE run_id = $1 AND id = ANY($2::uuid[])
  UNION ALL SELECT id::text, NULL, NULL, true FROM texts WHERE run_id = $1 AND id = ANY($3::bigint[])`;

/** A stored event, as the duplicate check reads it. */
interface StoredEventRow {
  id: string;
  seq: string | null;
  body_hash: Buffer | null;
}

/** A row of the duplicate check with the texts' lookup: an event, or (`text`) a stored text's id. */
export type StoredLookupRow = StoredEventRow & { text?: boolean };

/**
 * A chunk is projected and written once it holds this many steps, events or bytes of log bodies,
 * so that memory stays bounded (at most two chunks are held: the one written, the one projected).
 * Large, because every chunk costs its statements, each a round trip on which the chunk being
 * projected can wait: in requests of 32 MiB (`npm run bench:ingest`, 1M steps as columns, over TCP
 * to PostgreSQL 15, one pass each), chunks of 20,000 steps ingested 168.9k steps/s against 156.2k
 * with chunks of 2,000. The bytes bound chunks of large steps (256-d embeddings: about 2,800 steps).
 */
const FLUSH_STEPS = 16_000;
const FLUSH_EVENTS = 1000;
const FLUSH_BYTES = 4 * 1024 * 1024;

/**
 * One append request inside one transaction, with the run's row locked: events are validated as
 * they stream in (what each is, whether its id is new, whether the run takes events), given their
 * seq, written to the log in chunks, and projected by the RunProjector in the same transaction,
 * so a request of a million steps is never held in memory. Any problem throws, and the caller
 * rolls the whole request back.
 */
export class AppendSession {
  private readonly projector: RunProjector;
  /** Event ids of this request → the body hash and line of their first appearance. */
  private readonly seenIds = new Map<string, { hash: Buffer; position: number }>();
  private pending: PreparedEvent[] = [];
  private pendingSteps = 0;
  private pendingBytes = 0;
  private accepted = 0;
  private duplicates = 0;
  /** Every chunk's writes so far, in order: a chunk's are sent once the chunk before is written. */
  private writes: Promise<void> = Promise.resolve();
  /** Whether a chunk's writes were queued: the transaction's connection may be busy from then on. */
  private writing = false;
  /** Event ids looked up before the session began (`lookedUpAhead`): their stored row, or null. */
  private readonly storedAhead = new Map<string, StoredEventRow | null>();

  constructor(
    private readonly client: pg.PoolClient,
    /**
     * Where the events stored before this request are looked up once its first chunk is being
     * written: another connection answers at once, while the transaction's is busy (the run's lock
     * keeps anyone else from storing its events meanwhile, and this request's own are known without
     * asking). The first chunk asks on the transaction's own connection, idle then, so that a request
     * of one chunk (a trainer's iteration) wakes no other.
     */
    private readonly storedEvents: pg.Pool | pg.PoolClient,
    private readonly runId: string,
    run: RunSummary,
    /** The transaction's time: every event of the request is recorded at it. */
    private readonly now: Date,
    /** Where the events come from, as refusals name them. */
    private readonly origin: EventOrigin,
    /** Whose events these are: only the server writes run.created. */
    private readonly from: 'client' | 'server',
    /** Pack the iterations the request writes whole, in its transaction (in-hand-packing.ts). */
    packInHand?: PackInHand,
    /** Where the request's time goes, for the metrics (appends inside a caller's transaction are not timed). */
    private readonly clock?: AppendClock,
  ) {
    this.projector = new RunProjector(
      client,
      runId,
      run,
      (position, path, reason) => this.fail(position, path, reason),
      packInHand,
    );
  }

  /**
   * What was looked up for the request's first event with the run's lock (first-event-lookup.ts), in
   * this session's transaction: the chunk's own lookup then asks only for what this did not.
   */
  lookedUpAhead(asked: FirstEventLookup, rows: readonly StoredLookupRow[]): void {
    if (asked.eventId) this.storedAhead.set(asked.eventId, null);
    for (const r of rows) if (!r.text) this.storedAhead.set(r.id, r);
    this.projector.textsAskedAhead(
      asked.textIds,
      rows.flatMap((r) => (r.text ? [r.id] : [])),
    );
  }

  async add(item: IncomingEvent): Promise<void> {
    return this.addPrepared(prepareEvent(item, this.from, this.origin));
  }

  /** Adds an event `prepareEvent` has checked (perhaps before the session's run was locked). */
  async addPrepared({ position, event, body, hash }: PreparedEvent): Promise<void> {
    const seen = this.seenIds.get(event.id);
    if (seen) {
      if (!seen.hash.equals(hash))
        this.reusedId(position, event.id, this.origin.name(seen.position));
      this.duplicates++;
      return;
    }
    this.seenIds.set(event.id, { hash, position });
    this.pending.push({ position, event, body, hash });
    this.pendingSteps += slicesOf(event).reduce((n, s) => n + s.count, 0);
    this.pendingBytes += body?.length ?? 0;
    if (
      this.pendingSteps >= FLUSH_STEPS ||
      this.pending.length >= FLUSH_EVENTS ||
      this.pendingBytes >= FLUSH_BYTES
    )
      await this.flush();
  }

  /**
   * Writes what is left. `notify`: the run's subscribers are told of the events (when the
   * transaction commits), if any were accepted, by the statement that writes the run's summary.
   * `commit`: the transaction commits with the last writes (in their round trip: nothing follows).
   */
  async finish({ notify = false, commit = false } = {}): Promise<AppendResult & { steps: number }> {
    // The body has ended: the last chunk's iterations are packed while it is written, rather than
    // after every write (a request of one iteration waited 1.4–1.9 ms for it, bench:ingest's split),
    // and its statement ends the request's writes (the projector's finish, then, has none to send).
    const notice = () => (notify && this.accepted > 0 ? [runNotice(this.runId)] : []);
    await this.flush({ last: true, notice, commit });
    await this.writes;
    this.clock?.lap('write');
    await this.projector.finish(this.clock, notice(), commit);
    return {
      accepted: this.accepted,
      duplicates: this.duplicates,
      lastSeq: this.projector.summary.lastSeq,
      steps: this.projector.stepCount,
    };
  }

  /**
   * Projects the pending events into rows and queues their writes behind the chunk before, then
   * waits until that one is written: PostgreSQL writes one chunk while this thread projects the
   * next (at most two chunks' rows are held), and statements stay in order on the transaction's
   * connection. A failed write surfaces here or in `finish`.
   */
  private async flush({
    last = false,
    notice = () => [],
    commit = false,
  }: { last?: boolean; notice?: () => pg.QueryConfig[]; commit?: boolean } = {}): Promise<void> {
    const pending = this.pending;
    this.pending = [];
    this.pendingSteps = 0;
    this.pendingBytes = 0;
    const before = this.writes;
    this.clock?.lap('read');
    const batch = await this.dropStoredDuplicates(pending);
    this.clock?.lap('check');
    if (batch.length > 0) {
      let status = this.projector.summary.status;
      let seq = this.projector.summary.lastSeq;
      const sequenced: SequencedEvent[] = batch.map(({ position, event, body }) => {
        status = this.checkStatus(position, event, status);
        return { seq: ++seq, position, event, body, recordedAt: this.now };
      });
      this.accepted += batch.length;
      const { placed, write } = await this.projector.project(sequenced, {
        last,
        notice: last ? notice() : [],
        commit,
        clock: this.clock,
      });
      const logged = eventsInsert(
        this.runId,
        sequenced.map((e, n) => eventRow(e, placed[n] as PlacedSlice[], batch[n] as PreparedEvent)),
        this.now,
      );
      this.writes = before.then(() => write([logged]));
      this.writes.catch(() => undefined); // observed later, by the next await
      this.writing = true;
    }
    this.clock?.lap('project');
    await before;
    this.clock?.lap('write');
  }

  /** Lets the writes queued finish (ignoring their outcome), so that a rollback comes after them. */
  async settle(): Promise<void> {
    await this.writes.catch(() => undefined);
  }

  /**
   * Drops the events whose id is stored already with the same body (a retry: acknowledged, stored
   * once); an id stored with another body is the caller's mistake (409). Events stored before
   * body hashes existed and not yet backfilled count as the same.
   */
  private async dropStoredDuplicates(batch: PreparedEvent[]): Promise<PreparedEvent[]> {
    if (batch.length === 0) return batch;
    const lookup = this.writing ? this.storedEvents : this.client;
    const stored: StoredEventRow[] = [];
    const ids: string[] = [];
    for (const p of batch) {
      const ahead = this.storedAhead.get(p.event.id);
      if (ahead === undefined) ids.push(p.event.id);
      else if (ahead) stored.push(ahead);
    }
    const texts = this.projector.textsToLookUp(batch.map((p) => p.event));
    if (ids.length > 0 || texts.length > 0) {
      const answer = await lookup.query<StoredLookupRow>(
        texts.length > 0
          ? { text: STORED_EVENTS_AND_TEXTS_SQL, values: [this.runId, ids, texts] }
          : { text: STORED_EVENT_IDS_SQL, values: [this.runId, ids] },
      );
      for (const r of answer.rows) if (!r.text) stored.push(r);
      this.projector.textsStored(answer.rows.flatMap((r) => (r.text ? [r.id] : [])));
    }
    if (stored.length === 0) return batch;
    const byId = new Map(stored.map((r) => [r.id, r]));
    for (const p of batch) {
      const row = byId.get(p.event.id);
      if (row?.body_hash && !sameEvent(row.body_hash, p))
        this.reusedId(p.position, p.event.id, `event ${row.seq} of this run`);
    }
    this.duplicates += byId.size;
    return batch.filter((p) => !byId.has(p.event.id));
  }

  /**
   * Events after run.finished are refused until run.resumed reopens the run; resuming a running
   * run is a mistake too. Returns the run's status after the event.
   */
  private checkStatus(position: number, event: ValidEvent, status: RunStatus): RunStatus {
    if (event.type === 'run.resumed') {
      if (status !== 'running') return 'running';
      throw new DomainError(
        ErrorCode.Conflict,
        `${this.origin.name(position)}: run ${this.runId} is running; run.resumed reopens a finished run`,
        { ...this.origin.place(position), path: 'type', runStatus: status },
      );
    }
    if (status !== 'running') throw runNotRunning(this.origin, position, this.runId, status);
    return event.type === 'run.finished' ? event.data.status : status;
  }

  private reusedId(position: number, id: string, where: string): never {
    throw new DomainError(
      ErrorCode.Conflict,
      `${this.origin.name(position)}: id: event id ${id} is already used by ${where} with another body; give each event its own id (the same id with the same body is a retry and is stored once)`,
      { ...this.origin.place(position), path: 'id', eventId: id },
    );
  }

  private fail(position: number, path: string, reason: string): never {
    return invalidEvent(this.origin, position, path, reason);
  }
}

/** An incoming event checked in this thread (checkEvent), or refused as the origin names it. */
export function prepareEvent(
  item: IncomingEvent,
  from: 'client' | 'server',
  origin: EventOrigin,
): PreparedEvent {
  const checked = checkEvent(item.position, item.value, from);
  if (isIssue(checked)) invalidEvent(origin, item.position, checked.path, checked.reason);
  return checked;
}

export function invalidEvent(
  origin: EventOrigin,
  position: number,
  path: string,
  reason: string,
): never {
  throw new DomainError(ErrorCode.InvalidEvent, `${origin.name(position)}: ${path}: ${reason}`, {
    ...origin.place(position),
    path,
    reason,
  });
}

/** The log's row of a sequenced event. */
function eventRow(e: SequencedEvent, placed: PlacedSlice[], p: PreparedEvent): EventRow {
  return {
    seq: e.seq,
    id: e.event.id,
    type: e.event.type,
    iteration: 'iteration' in e.event.data ? e.event.data.iteration : null,
    data: JSON.stringify(storedData(e.event, placed)),
    stepCount: placed.reduce((sum, s) => sum + s.stepCount, 0),
    hash: p.hash,
    body: p.body,
  };
}

/** The event's data as stored: step-bearing events name their slices (steps are in the body). */
function storedData(event: ValidEvent, placed: PlacedSlice[]): unknown {
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
        const p = placed[n++] as PlacedSlice;
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

/** An event refused because its run is finished (`status`): the same words wherever it is checked. */
export function runNotRunning(
  origin: EventOrigin,
  position: number,
  runId: string,
  status: string,
): DomainError {
  return new DomainError(
    ErrorCode.RunFinished,
    `${origin.name(position)}: run ${runId} is ${status}; send a run.resumed event first to add to it`,
    { ...origin.place(position), path: 'type', runStatus: status },
  );
}
