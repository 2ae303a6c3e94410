import type { Exit } from './child-process-output';
import type { Postmaster } from './postmaster';

/** What the supervisor tells its owner (who logs it: library code does not log). */
export interface SupervisorEvents {
  crashed(pid: number, exit: Exit, lastLines: string[]): void;
  restarted(pid: number): void;
  restartFailed(error: unknown, retryInMs: number): void;
}

const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

/**
 * Keeps the embedded PostgreSQL running: when it ends without being asked to (killed, crashed),
 * it is started again — after a second, since the dead postmaster's children take a moment to
 * notice and let go of its shared memory — and again with a doubling pause (up to 30 s) for as
 * long as starting fails. Meanwhile the server answers 503: its pool reconnects by itself.
 */
export class PostmasterSupervisor {
  private current: Postmaster | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private restarting: Promise<void> | undefined;
  private failures = 0;

  constructor(
    first: Postmaster,
    private readonly launch: () => Promise<Postmaster>,
    private readonly events: SupervisorEvents,
  ) {
    this.watch(first);
  }

  /** The running postmaster's pid, if one runs. */
  pid(): number | undefined {
    return this.current?.pid;
  }

  private watch(postmaster: Postmaster): void {
    this.current = postmaster;
    void postmaster.exited.then((exit) => {
      if (this.stopped || this.current !== postmaster) return;
      this.current = undefined;
      this.events.crashed(postmaster.pid, exit, postmaster.lastLines());
      this.schedule(FIRST_RETRY_MS);
    });
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.restarting = this.restart().finally(() => (this.restarting = undefined));
    }, ms);
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    try {
      const postmaster = await this.launch();
      if (this.stopped) return await postmaster.stop();
      this.failures = 0;
      this.watch(postmaster);
      this.events.restarted(postmaster.pid);
    } catch (e) {
      if (this.stopped) return;
      this.failures++;
      const next = Math.min(FIRST_RETRY_MS * 2 ** this.failures, MAX_RETRY_MS);
      this.events.restartFailed(e, next);
      this.schedule(next);
    }
  }

  /** Stops supervising and stops PostgreSQL (waiting for a restart under way to finish first). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.restarting;
    await this.current?.stop();
  }
}
