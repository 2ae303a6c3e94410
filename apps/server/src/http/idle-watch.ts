/** Calls `onIdle` once when `ms` pass with the watch running and no `resume` in between. */
export class IdleWatch {
  private since = Date.now();
  private paused = false;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number, onIdle: () => void) {
    this.timer = setInterval(
      () => {
        if (!this.paused && Date.now() - this.since > ms) {
          this.stop();
          onIdle();
        }
      },
      Math.min(1000, Math.max(10, ms / 4)),
    );
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.since = Date.now();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
