import type { Logger } from '@nestjs/common';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Calls `stop` once, on the first of: SIGINT (Ctrl-C), SIGTERM (kill, orchestrators), SIGHUP
 * (its terminal closed), or — when npm started it (`npm start`) — npm being gone.
 *
 * Why the last: npm runs a script through `sh -c` and passes SIGTERM and SIGINT to that child only.
 * `npm start` execs the server, so the server is npm's child and gets them; but npm killed outright
 * (SIGKILL, out of memory) passes nothing on, and the server would serve on with its database.
 * A server whose parent changed was left behind, and stops. Started otherwise (systemd, a
 * container, `node dist/...` in a shell), the server stays independent of its parent.
 * Repeated requests (a Ctrl-C reaches npm and the server at once, and npm forwards it) are
 * only logged.
 */
export function onStopRequest(logger: Logger, stop: () => void): void {
  let requested = false;
  const request = (reason: string) => {
    if (requested) {
      logger.log(`${reason}: already shutting down`);
      return;
    }
    requested = true;
    logger.log(`${reason}: shutting down`);
    stop();
  };
  for (const signal of SIGNALS) process.on(signal, () => request(signal));
  if (process.env.npm_lifecycle_event !== undefined) {
    const parent = process.ppid;
    setInterval(() => {
      if (!requested && process.ppid !== parent) request(`parent process ${parent} exited`);
    }, 1000).unref();
  }
}
