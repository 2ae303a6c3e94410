import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** A WebSocket close frame, server to client: code 1001, "going away". */
const GOING_AWAY = Buffer.from([0x88, 0x02, 0x03, 0xe9]);
/** How long a WebSocket peer has to close its side after the close frame. */
const SOCKET_CLOSE_GRACE_MS = 1000;

/**
 * Lets a shutdown end as soon as the requests in flight are answered. `server.close()` stops new
 * connections and closes the idle ones, but a kept-alive connection busy at that moment stays open
 * after its answer until its idle timeout (65 s here: past most orchestrators' grace period), and a
 * client may send more requests on it meanwhile; a WebSocket (a live-updates subscription, e.g. a
 * browser tab on a run's page) would keep it open for as long as the tab. Once draining, every
 * answer not yet begun says `Connection: close`, a connection is closed as soon as it falls idle,
 * and each WebSocket is told the server is going away (clients reconnect to the next server).
 * A connection that has not sent a byte yet is closed at once: Node counts it as neither idle nor
 * busy, so it held the shutdown until the header timeout (66 s) — clients' pools open such
 * connections ahead of use, and a request aborted before it was written leaves one.
 */
export class ConnectionDraining {
  private draining = false;
  private readonly inFlight = new Set<Response>();
  private readonly upgraded = new Set<Duplex>();
  private readonly connections = new Set<Socket>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
    server.on('upgrade', (_req, socket: Duplex) => {
      // Only watching: with no WebSocket server to take it, Node would have closed the socket.
      if (server.listenerCount('upgrade') === 1) return void socket.destroy();
      this.upgraded.add(socket);
      socket.once('close', () => this.upgraded.delete(socket));
    });
  }

  /** Express middleware: keeps track of the answers not yet finished. */
  readonly middleware = (_req: Request, res: Response, next: NextFunction): void => {
    if (this.draining) res.setHeader('Connection', 'close');
    this.inFlight.add(res);
    res.on('close', () => {
      this.inFlight.delete(res);
      // After Node's own handling of the finished answer, which marks the connection idle.
      if (this.draining) setImmediate(() => this.server.closeIdleConnections());
    });
    next();
  };

  /** Stops accepting and resolves once every connection has closed. */
  drain(): Promise<void> {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    for (const socket of this.upgraded) {
      socket.end(GOING_AWAY);
      setTimeout(() => socket.destroy(), SOCKET_CLOSE_GRACE_MS).unref();
    }
    return new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      for (const socket of this.connections) if (socket.bytesRead === 0) socket.destroy();
    });
  }
}
