import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { Database } from '../database/database';
import { Notifications } from '../database/notifications';
import { packRun } from './iteration-packing';

/** Changes to one run that arrive within this long are packed in one pass. */
const SETTLE_MS = 50;

/**
 * Writes iteration_columns (packed-columns.ts): each complete iteration with steps (a later
 * iteration exists, or the run ended) packed once at its current log position, so that recompute
 * reads it as one row. Runs in the background of a worker process after every change to a run
 * (what a NOTIFY announces), one pass per run at a time; an iteration changed by late steps or
 * outcomes is packed again, since readers ignore a row of another position. Losing a pass (a
 * crash) costs only speed: readers fall back to the steps table, and the next change packs it.
 */
@Injectable()
export class IterationPacker implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('iteration-packer');
  private stopListening: (() => void) | undefined;
  /** Runs with a pass pending (the timer) or running (the promise), and whether to go again. */
  private readonly runs = new Map<string, { again: boolean; pass?: Promise<void> }>();
  private stopped = false;

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(Notifications) private readonly notifications: Notifications,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const { worker, packIterations } = this.config.recompute;
    if (worker && packIterations === 'on-complete')
      this.stopListening = this.notifications.onAnyRun((runId) => this.poke(runId));
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.stopListening?.();
    await Promise.all([...this.runs.values()].map((r) => r.pass));
  }

  /** Packs the run's complete iterations that lack a fresh packed row, soon. */
  poke(runId: string): void {
    const state = this.runs.get(runId);
    if (state) {
      state.again = true;
      return;
    }
    this.runs.set(runId, { again: false });
    setTimeout(() => this.start(runId), SETTLE_MS).unref();
  }

  private start(runId: string): void {
    const state = this.runs.get(runId);
    if (!state || this.stopped) return;
    state.again = false;
    state.pass = packRun(this.db.pool, runId, () => this.stopped)
      .then(
        () => undefined,
        (e: Error) => this.logger.warn(`packing run ${runId}: ${e.message}`),
      )
      .then(() => {
        if (state.again && !this.stopped) setTimeout(() => this.start(runId), SETTLE_MS).unref();
        else this.runs.delete(runId);
      });
  }
}
