import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type pg from 'pg';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { isUuid } from '../database/uuid';
import { Database } from '../database/database';
import { Metrics } from '../operations/metrics';
import { DomainError, runNotFound } from '../errors/domain-error';
import {
  AppendSession,
  prepareEvent,
  type AppendResult,
  type IncomingEvent,
  type StoredLookupRow,
} from './append-session';
import { AppendClock } from './append-clock';
import type { PackInHand } from './run-projector';
import { BODY_LINES, serverEvent, type EventOrigin } from './event-origin';
import { ndjsonEvents, ndjsonLines } from './ndjson-source';
import { pendingEvent, type PendingEvent } from './prepare-event';
import { PrepareThread, preparedInThread } from './prepare-thread';
import { firstEventLookup } from './first-event-lookup';
import { beginLockAndAsk, lockRun } from './run-lock';

/** Writes done in the appending transaction, after the events (e.g. a checkpoint's bytes). */
export type AlsoWrite = (client: pg.PoolClient) => Promise<void>;

/**
 * Appends a request's events to a run's stream, all or nothing: one
 * transaction, the run row locked (FOR UPDATE) so concurrent appenders to one
 * run get gap-free sequence numbers, and a rollback on any error, including
 * a source that fails mid-way (a cut connection). The connection and the lock
 * are taken only once the first event has arrived and parsed, so a client that
 * opens a request and sends nothing holds neither.
 */
@Injectable()
export class EventAppender implements OnModuleDestroy {
  private readonly logger = new Logger('ingest');
  /** Where large bodies are parsed and checked (prepare-thread.ts). */
  private readonly thread: PrepareThread;
  /** How appends pack in hand (CREDITLAB_PACK_ITERATIONS=on-append), or undefined. */
  private readonly packInHand: PackInHand | undefined;

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(Metrics) private readonly metrics: Metrics,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {
    this.thread = new PrepareThread({
      sent: (lines) => metrics.threadLines.inc(lines),
      warn: (message) => this.logger.warn(message),
    });
    this.packInHand =
      config.recompute.packIterations === 'on-append'
        ? {
            warn: (message) => this.logger.warn(message),
            packJobs: (jobs) => this.thread.pack(jobs),
          }
        : undefined;
  }

  async onModuleDestroy(): Promise<void> {
    await this.thread.close();
  }

  /**
   * An NDJSON request body's events: parsed and checked on the preparing thread when the body is
   * large enough for that to pay (CREDITLAB_INGEST_THREAD_MIN_BYTES; a body of unknown length
   * counts as large), else here.
   */
  appendBody(runId: string, req: IncomingMessage): Promise<AppendResult> {
    const limits = this.config.limits;
    const minBytes = this.config.ingestThreadMinBytes;
    const length = Number(req.headers['content-length'] ?? Number.POSITIVE_INFINITY);
    if (minBytes === undefined || length < minBytes)
      return this.append(runId, ndjsonEvents(req, limits));
    return this.appendPrepared(
      runId,
      preparedInThread(this.thread, ndjsonLines(req, limits), 'client', BODY_LINES),
      BODY_LINES,
    );
  }

  append(
    runId: string,
    events: AsyncIterable<IncomingEvent>,
    origin: EventOrigin = BODY_LINES,
    alsoWrite?: AlsoWrite,
  ): Promise<AppendResult> {
    return this.appendPrepared(runId, preparedHere(events, origin), origin, alsoWrite);
  }

  private async appendPrepared(
    runId: string,
    events: AsyncIterable<PendingEvent>,
    origin: EventOrigin,
    alsoWrite?: AlsoWrite,
  ): Promise<AppendResult> {
    const timer = this.metrics.appendSeconds.startTimer();
    const clock = new AppendClock();
    try {
      const result = await this.appendInTransaction(runId, events, origin, alsoWrite, clock);
      for (const [phase, seconds] of clock.seconds())
        this.metrics.appendPhaseSeconds.observe({ phase }, seconds);
      this.metrics.ingestedEvents.inc(result.accepted);
      this.metrics.ingestedSteps.inc(result.steps);
      this.metrics.duplicateEvents.inc(result.duplicates);
      return { accepted: result.accepted, duplicates: result.duplicates, lastSeq: result.lastSeq };
    } catch (e) {
      this.metrics.rejectedRequests.inc({ code: e instanceof DomainError ? e.code : 'INTERNAL' });
      throw e;
    } finally {
      timer();
    }
  }

  /**
   * One event the server writes itself (validated like any other; idempotent on its id), and
   * optionally rows of its own in the same transaction: written only if the event is accepted.
   */
  appendOne(
    runId: string,
    event: { id: string; type: string; data: unknown },
    alsoWrite?: AlsoWrite,
  ): Promise<AppendResult> {
    return this.append(
      runId,
      (async function* () {
        yield { position: 1, value: event };
      })(),
      // Not a line the caller sent: a refusal names the event the request would have recorded.
      serverEvent(event.type),
      alsoWrite,
    );
  }

  /**
   * The server's own events, in a transaction the caller holds (run creation writes `run.created`
   * in the transaction that inserts the run's row): validated and projected like any other.
   */
  async appendWithin(
    client: pg.PoolClient,
    runId: string,
    event: { id: string; type: string; data: unknown },
  ): Promise<AppendResult> {
    const locked = await lockRun(client, runId);
    if (!locked) throw runNotFound(runId);
    const session = new AppendSession(
      client,
      client,
      runId,
      locked.run,
      locked.now,
      serverEvent(event.type),
      'server',
    );
    await session.add({ position: 1, value: event });
    return session.finish();
  }

  private async appendInTransaction(
    runId: string,
    events: AsyncIterable<PendingEvent>,
    origin: EventOrigin,
    alsoWrite: AlsoWrite | undefined,
    clock: AppendClock,
  ): Promise<AppendResult & { steps: number }> {
    if (!isUuid(runId)) throw runNotFound(runId);
    const source = events[Symbol.asyncIterator]();
    const first = await source.next();
    clock.lap('read');
    const client = await this.db.ingestPool.connect().catch(async (e: unknown) => {
      await source.return?.(); // stops the body's reader and its idle watch
      throw e;
    });
    clock.lap('connect');
    let session: AppendSession | undefined;
    try {
      // The transaction begins and the run is locked while the first event is checked, and what the
      // event needs looked up is asked with them; a missing run is still reported before a bad event.
      const lookup = first.done ? undefined : firstEventLookup(runId, first.value.value);
      const locking = beginLockAndAsk<StoredLookupRow>(client, runId, lookup?.sql);
      locking.catch(() => undefined); // awaited below
      const prepared = first.done ? undefined : attempt(first.value);
      clock.lap('read');
      const { locked, rows: lookedUp } = await locking;
      clock.lap('lock');
      if (!locked) throw runNotFound(runId);
      session = new AppendSession(
        client,
        this.db.pool,
        runId,
        locked.run,
        locked.now,
        origin,
        'client',
        this.packInHand,
        clock,
      );
      if (lookup) session.lookedUpAhead(lookup, lookedUp);
      if (prepared) await session.addPrepared(prepared());
      for (let item = await source.next(); !item.done; item = await source.next())
        await session.addPrepared(item.value());
      // Subscribers hear of the events when the transaction commits. It commits with the last
      // writes, in their round trip, unless the caller adds rows of its own after them.
      const result = await session.finish({ notify: true, commit: !alsoWrite });
      if (alsoWrite) {
        await alsoWrite(client);
        await client.query('COMMIT');
      }
      clock.lap('commit');
      return result;
    } catch (e) {
      // A chunk may still be writing: let it finish so that nothing lands after the rollback.
      await session?.settle();
      await client.query('ROLLBACK').catch(() => undefined);
      await source.return?.();
      throw e;
    } finally {
      client.release();
    }
  }
}

/** Runs `f` now; the returned function gives its value, or throws what it threw. */
function attempt<T>(f: () => T): () => T {
  try {
    const value = f();
    return () => value;
  } catch (e) {
    return () => {
      throw e;
    };
  }
}

/**
 * Events checked in this thread as they are asked for: the first one only once its run is being
 * locked, so that the two overlap and a missing run is reported before a bad event.
 */
async function* preparedHere(
  events: AsyncIterable<IncomingEvent>,
  origin: EventOrigin,
): AsyncGenerator<PendingEvent> {
  for await (const item of events)
    yield pendingEvent(() => prepareEvent(item, 'client', origin), item.value);
}
