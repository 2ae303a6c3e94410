import type { IncomingMessage } from 'node:http';

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

/**
 * A request body's watch: `onIdle` once no bytes arrive for `ms`; it stops by itself when the body
 * ends or the connection closes. Attach it after the body's reader, whose own 'data' listener must
 * be there before the stream starts flowing.
 */
export function watchBodyIdle(req: IncomingMessage, ms: number, onIdle: () => void): IdleWatch {
  const watch = new IdleWatch(ms, onIdle);
  req.on('data', () => watch.resume());
  req.once('end', () => watch.stop());
  req.once('close', () => watch.stop());
  return watch;
}
