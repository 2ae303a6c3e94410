import { Inject, Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { Notifications } from '../database/notifications';
import type { RunStatus } from '../graphql/enums';
import type { RunProgress } from './run.models';

/** The longest a subscriber waits without news before it is sent the run's state anyway. */
const HEARTBEAT_MS = 15_000;

/** A run's progress as a stream: its state now, then again after every change (coalesced). */
@Injectable()
export class RunProgressService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(Notifications) private readonly notifications: Notifications,
  ) {}

  async *follow(runId: string): AsyncGenerator<RunProgress> {
    let changed = true;
    let wake: (() => void) | undefined;
    const stop = this.notifications.onRun(runId, () => {
      changed = true;
      wake?.();
    });
    try {
      for (;;) {
        // Changes that arrive while a state is read or sent make one more state, not one each.
        if (!changed)
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, HEARTBEAT_MS).unref();
          });
        changed = false;
        wake = undefined;
        yield await this.now(runId);
      }
    } finally {
      stop();
    }
  }

  private async now(runId: string): Promise<RunProgress> {
    const res = await this.db.pool.query<{
      status: RunStatus;
      last_seq: string;
      last_iteration: number | null;
    }>('SELECT status, last_seq, last_iteration FROM runs WHERE id = $1', [runId]);
    const r = res.rows[0];
    return {
      runId,
      status: r?.status ?? 'running',
      lastSeq: Number(r?.last_seq ?? 0),
      lastIteration: r?.last_iteration ?? null,
    };
  }
}
