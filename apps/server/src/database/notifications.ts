import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { Database } from './database';
import { ListenerLost, notificationsArrive } from './notification-probe';
import { RUN_CHANNEL, runNotice } from './run-notice';

export { RUN_CHANNEL };

/**
 * The channel a rebuild of a run's projections is announced on (payload: the run's id): what was
 * derived from them (packed iterations) is gone, whatever a process remembers about it.
 */
export const REBUILT_CHANNEL = 'creditlab_run_rebuilt';
/** The emitter's event for every run (run ids are UUIDs, never this). */
const ANY_RUN = '*';

/**
 * PostgreSQL LISTEN/NOTIFY as events in this process: every server process behind one address
 * hears what any of them wrote (a NOTIFY sent inside a transaction arrives when it commits). One
 * connection of its own, re-opened with back-off when the database goes away.
 */
@Injectable()
export class Notifications implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('notifications');
  private readonly runs = new EventEmitter().setMaxListeners(0);
  private readonly rebuilds = new EventEmitter().setMaxListeners(0);
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 500;
  /** Whether this process has checked that notifications reach its listening connection. */
  private probed = false;
  /** The probe's own connection while it runs (ended with the process). */
  private prober: pg.Client | undefined;
  /** What the last check found wrong, if anything (`/readyz` shows it). */
  private problem: string | undefined;

  constructor(@Inject(Database) private readonly db: Database) {}

  onModuleInit(): Promise<void> {
    return this.connect();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    await this.prober?.end().catch(() => undefined);
    await this.client?.end().catch(() => undefined);
  }

  /**
   * Why notices may not be reaching this process, when the check after listening found so (it did
   * not see its own come back, or could not check); undefined when it saw it, or has not ended yet.
   */
  warning(): string | undefined {
    return this.problem;
  }

  /** Calls `listener` whenever run `runId` changed (in any process); returns how to stop. */
  onRun(runId: string, listener: () => void): () => void {
    this.runs.on(runId, listener);
    return () => this.runs.off(runId, listener);
  }

  /** Calls `listener` with the run's id whenever any run changed (in any process); returns how to stop. */
  onAnyRun(listener: (runId: string) => void): () => void {
    this.runs.on(ANY_RUN, listener);
    return () => this.runs.off(ANY_RUN, listener);
  }

  /** Calls `listener` with the run's id whenever a run's projections were rebuilt; returns how to stop. */
  onAnyRebuild(listener: (runId: string) => void): () => void {
    this.rebuilds.on(ANY_RUN, listener);
    return () => this.rebuilds.off(ANY_RUN, listener);
  }

  /**
   * Warns when a notice sent on a connection of its own (not the pools, whose statements `/metrics`
   * counts) does not reach the listening one within PROBE_TIMEOUT_MS, connecting included. A
   * listener lost meanwhile is checked again once it is back; a process stopping says nothing.
   */
  private async checkArrival(listener: pg.Client): Promise<void> {
    const sender = new pg.Client({
      connectionString: this.db.url,
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    });
    sender.on('error', () => undefined); // a lost connection fails the probe's query instead
    this.prober = sender;
    try {
      await sender.connect();
      const arrived = await notificationsArrive(sender, listener, PROBE_TIMEOUT_MS);
      if (this.stopped) return;
      const why = `a NOTIFY sent through DATABASE_URL did not reach this process's LISTEN within ${PROBE_TIMEOUT_MS / 1000} s: live updates and other processes' notices of new events will not arrive. Is DATABASE_URL a transaction-mode pooler? The server needs session connections (docs/scaling.md)`;
      this.problem = arrived ? undefined : `not arriving: ${why}`;
      if (!arrived) this.logger.warn(why);
    } catch (e) {
      if (this.stopped) return;
      if (e instanceof ListenerLost) this.probed = false;
      else {
        const why = `could not check that notifications arrive: ${(e as Error).message}`;
        this.problem = `unchecked: ${why}`;
        this.logger.warn(why);
        // A database that could not be reached for a moment is not a lasting warning: check again.
        setTimeout(() => {
          if (!this.stopped && this.client === listener) void this.checkArrival(listener);
        }, PROBE_RETRY_MS).unref();
      }
    } finally {
      this.prober = undefined;
      await sender.end().catch(() => undefined);
    }
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.db.url });
    client.on('notification', (n) => {
      if (!n.payload) return;
      if (n.channel === REBUILT_CHANNEL) this.rebuilds.emit(ANY_RUN, n.payload);
      if (n.channel !== RUN_CHANNEL) return;
      this.runs.emit(n.payload);
      this.runs.emit(ANY_RUN, n.payload);
    });
    client.on('error', (e) => this.logger.warn(`listening connection lost: ${e.message}`));
    client.on('end', () => {
      if (this.stopped) return;
      setTimeout(() => void this.connect(), this.retryMs).unref();
      this.retryMs = Math.min(this.retryMs * 2, 30_000);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${RUN_CHANNEL}; LISTEN ${REBUILT_CHANNEL}`);
      this.client = client;
      this.retryMs = 500;
      if (!this.probed) {
        this.probed = true;
        void this.checkArrival(client);
      }
    } catch (e) {
      this.logger.warn(`cannot listen for run changes yet: ${(e as Error).message}`);
      await client.end().catch(() => undefined);
    }
  }
}

/** How long a notice may take to arrive before the server says it did not (a loaded machine's worst is far less). */
const PROBE_TIMEOUT_MS = 10_000;
/** How long after a check that could not be made it is tried again. */
const PROBE_RETRY_MS = 30_000;

/** Announces a change of run `runId` (inside a transaction: when it commits). */
export async function notifyRun(client: pg.ClientBase | pg.Pool, runId: string): Promise<void> {
  await client.query(runNotice(runId));
}

/** Announces that run `runId`'s projections were rebuilt (inside a transaction: when it commits). */
export async function notifyRebuilt(client: pg.ClientBase, runId: string): Promise<void> {
  await client.query('SELECT pg_notify($1, $2)', [REBUILT_CHANNEL, runId]);
}
