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
import { NOTHING_PACKED, packRun, type PackedUpTo } from './iteration-packing';

/** Changes to one run that arrive within this long are packed in one pass. */
const SETTLE_MS = 50;
/** Runs whose last pass this process remembers (the oldest is forgotten: its next pass looks at everything). */
const REMEMBERED_RUNS = 10_000;

/**
 * Writes iteration_columns (packed-columns.ts): each complete iteration with steps (a later
 * iteration exists, or the run ended) packed once at its current log position, so that recompute
 * reads it as one row. With on-append, the appends themselves pack the iterations they write
 * whole (in-hand-packing.ts), and a pass here finds only the others. Runs in the background of a
 * worker process after every change to a run (what a NOTIFY announces), one pass per run at a
 * time; an iteration changed by late steps or outcomes is packed again, since readers ignore a row
 * of another position. Losing a pass (a crash) costs only speed: readers fall back to the step
 * slices, and the next change packs it.
 */
@Injectable()
export class IterationPacker implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('iteration-packer');
  private stopListening: (() => void) | undefined;
  /**
   * Runs with a pass pending (the timer) or running (the promise), whether to go again, and whether
   * that pass must look at every iteration.
   */
  private readonly runs = new Map<
    string,
    { again: boolean; everything: boolean; pass?: Promise<void> }
  >();
  /** Where each run's last complete pass left it: the next pass looks only at what changed since. */
  private readonly packedUpTo = new Map<string, PackedUpTo>();
  private stopped = false;

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(Notifications) private readonly notifications: Notifications,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const { worker, packIterations } = this.config.recompute;
    // on-append packs most iterations in the appending transaction; the rest (appended to by several
    // requests, or too large to keep in hand) are packed here as they complete.
    if (worker && packIterations !== 'on-read') {
      const stopRuns = this.notifications.onAnyRun((runId) => this.poke(runId));
      // A rebuild deleted the run's packed rows behind this process's memory of them.
      const stopRebuilds = this.notifications.onAnyRebuild((runId) => this.poke(runId, true));
      this.stopListening = () => {
        stopRuns();
        stopRebuilds();
      };
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.stopListening?.();
    await Promise.all([...this.runs.values()].map((r) => r.pass));
  }

  /**
   * Packs the run's complete iterations that lack a fresh packed row, soon. After an append, a pass
   * looks at what changed since the run's last pass; `everything` (a read found an iteration not
   * packed) looks at every iteration, in case rows went missing behind this process's back.
   */
  poke(runId: string, everything = false): void {
    const state = this.runs.get(runId);
    if (state) {
      state.again = true;
      state.everything ||= everything;
      return;
    }
    this.runs.set(runId, { again: false, everything });
    setTimeout(() => this.start(runId), SETTLE_MS).unref();
  }

  private start(runId: string): void {
    const state = this.runs.get(runId);
    if (!state || this.stopped) return;
    const since = state.everything ? NOTHING_PACKED : this.packedUpTo.get(runId);
    state.again = false;
    state.everything = false;
    state.pass = packRun(this.db.pool, runId, () => this.stopped, since)
      .then(
        ({ upTo }) => this.remember(runId, upTo),
        (e: Error) => {
          this.packedUpTo.delete(runId);
          this.logger.warn(`packing run ${runId}: ${e.message}`);
        },
      )
      .then(() => {
        if (state.again && !this.stopped) setTimeout(() => this.start(runId), SETTLE_MS).unref();
        else this.runs.delete(runId);
      });
  }

  private remember(runId: string, upTo: PackedUpTo | undefined): void {
    this.packedUpTo.delete(runId); // re-inserted last: the Map's order is the order of use
    if (!upTo) return;
    this.packedUpTo.set(runId, upTo);
    if (this.packedUpTo.size > REMEMBERED_RUNS)
      this.packedUpTo.delete(this.packedUpTo.keys().next().value as string);
  }
}
