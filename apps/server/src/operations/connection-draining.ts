import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';

/**
 * Lets a shutdown end as soon as the requests in flight are answered. `server.close()` stops new
 * connections and closes the idle ones, but a kept-alive connection busy at that moment stays open
 * after its answer until its idle timeout (65 s here: past most orchestrators' grace period), and a
 * client may send more requests on it meanwhile. Once draining, every answer not yet begun says
 * `Connection: close`, and a connection is closed as soon as it falls idle.
 */
export class ConnectionDraining {
  private draining = false;
  private readonly inFlight = new Set<Response>();

  constructor(private readonly server: () => Server) {}

  /** Express middleware: keeps track of the answers not yet finished. */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    if (this.draining) res.setHeader('Connection', 'close');
    this.inFlight.add(res);
    res.on('close', () => {
      this.inFlight.delete(res);
      // After Node's own handling of the finished answer, which marks the connection idle.
      if (this.draining) setImmediate(() => this.server().closeIdleConnections());
    });
    next();
  };

  /** Stops accepting and resolves once every connection has closed. */
  drain(): Promise<void> {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    const server = this.server();
    return new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
  }
}
