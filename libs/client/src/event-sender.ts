import type { ClientEvent } from '@creditlab/events';
import { transientFailure } from './client-errors';
import type { AppendAnswer } from './creditlab-client';
import { ndjsonLines } from './ndjson-lines';

const MiB = 2 ** 20;

export interface EventSenderOptions {
  /**
   * The largest request it makes, in bytes of NDJSON (one event larger than this goes alone): 32 MiB
   * by default, as the Python client's `max_request_bytes`.
   */
  maxRequestBytes?: number;
  /** Encoded events it holds before `log` waits for the server to catch up: 512 MiB by default. */
  maxQueueBytes?: number;
  /**
   * While the server cannot be reached (the client's own retries spent on what it retries: network
   * errors, 5xx and 429 answers; see transientFailure), how long to wait before sending the same request again: 10 s by default. The
   * events stay queued meanwhile, so `log` waits once `maxQueueBytes` of them are.
   */
  retryIntervalMs?: number;
  /**
   * Told when the server cannot be reached and when it is back; by default a Node warning
   * (`process.emitWarning`, type CreditlabWarning).
   */
  onWarning?: (message: string) => void;
}

/** What a sender did so far. */
export interface SenderStats {
  /** Events handed to `log`. */
  logged: number;
  /** Requests the server answered, and the events and NDJSON bytes they held. */
  requests: number;
  events: number;
  bytes: number;
  /** Of those events, how many the server stored, and how many it had stored before (a retry's). */
  accepted: number;
  duplicates: number;
  /** Requests sent again: by the client after a failure, and by the sender after an outage. */
  retries: number;
  /** The run's last sequence number after the last request. */
  lastSeq: number;
}

/** One `log` call's events, one NDJSON line each (UTF-8, no line end), and how far requests took them. */
interface Logged {
  lines: Uint8Array[];
  bytes: number;
  next: number;
}

/**
 * The background sender of one run's events, for a trainer that should not wait on the server at
 * every iteration (`client.sender(runId)`). `log` encodes the events, queues them and returns;
 * requests go out one at a time, each with everything that queued while the one before was out (up
 * to `maxRequestBytes`, whole `log` calls unless one alone is larger), so a trainer slower than the
 * server has each iteration sent alone, as it ends, and one faster than the server has its
 * iterations joined into fewer, larger requests, which the server ingests at a higher rate
 * (docs/events.md, "Throughput"). Events reach the server in the order logged.
 *
 * Await `log`: each call gives Node's event loop a turn, which is when requests make progress in a
 * caller that otherwise computes without yielding, and its wait is what bounds the queue's memory.
 * While the server cannot be reached the sender keeps its events and tries again every
 * `retryIntervalMs`; a request the server refuses (4xx, or a 5xx the client does not retry) stops it: the events from that request on
 * are not sent, and `log`, `flush` and `close` throw the refusal. A retry never stores an event
 * twice: the server stores each event id once.
 */
export class EventSender {
  readonly stats: SenderStats = {
    logged: 0,
    requests: 0,
    events: 0,
    bytes: 0,
    accepted: 0,
    duplicates: 0,
    retries: 0,
    lastSeq: 0,
  };
  private readonly maxRequestBytes: number;
  private readonly maxQueueBytes: number;
  private readonly retryIntervalMs: number;
  private readonly warn: (message: string) => void;
  private readonly queue: Logged[] = [];
  private queuedBytes = 0;
  private sending = false;
  private closing = false;
  private failure: { error: unknown } | undefined;
  /** The wait before trying again while the server cannot be reached; ended early by `abandon`. */
  private pause: { timer: NodeJS.Timeout; resume: () => void } | undefined;
  /** Aborts the request that is out (and the client's retries of it), for `abandon`. */
  private inFlight: AbortController | undefined;
  /** `flush` calls waiting for the events logged before them to be stored. */
  private flushes: { upTo: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  /** `log` calls waiting for the queue to shrink under `maxQueueBytes`. */
  private waitingForRoom: (() => void)[] = [];

  constructor(
    private readonly post: (
      lines: Uint8Array[],
      options: { eventsBefore: number; signal: AbortSignal },
    ) => Promise<AppendAnswer>,
    readonly runId: string,
    options: EventSenderOptions = {},
    /** Called once the sender is closed or stopped (the client then makes a new one for the run). */
    private readonly onEnd: () => void = () => undefined,
  ) {
    this.maxRequestBytes = positive('maxRequestBytes', options.maxRequestBytes, 32 * MiB);
    this.maxQueueBytes = positive('maxQueueBytes', options.maxQueueBytes, 512 * MiB);
    this.retryIntervalMs = positive('retryIntervalMs', options.retryIntervalMs, 10_000);
    // Node's warnings by default: on stderr unless the process says otherwise (--no-warnings).
    const warn =
      options.onWarning ?? ((message) => process.emitWarning(message, 'CreditlabWarning'));
    this.warn = (message) => {
      try {
        warn(message);
      } catch {
        // a failing listener must not stop the sending
      }
    };
  }

  /**
   * Queues `events` (encoded now, so changing the objects afterwards changes nothing sent) and
   * returns once they are queued: after one turn of the event loop, or, while more than
   * `maxQueueBytes` is queued, once the server has caught up that far.
   */
  async log(events: Iterable<ClientEvent>): Promise<void> {
    if (
      typeof events === 'string' ||
      typeof (events as Partial<Iterable<ClientEvent>>)?.[Symbol.iterator] !== 'function'
    )
      throw new TypeError(
        'log takes a list of event objects (an array, or any iterable); NDJSON text goes to logNdjson',
      );
    return this.enqueue(Array.from(events, (e) => Buffer.from(JSON.stringify(e))));
  }

  /**
   * Queues events already encoded as NDJSON, one JSON event per line, such as a file of them read
   * as it is: lines end as the server reads them (\n, \r\n or \r), blank lines and a leading
   * byte-order mark are skipped, and the server checks the rest. Bytes are not copied: leave
   * them unchanged until flushed.
   */
  async logNdjson(ndjson: string | Uint8Array): Promise<void> {
    return this.enqueue(ndjsonLines(typeof ndjson === 'string' ? Buffer.from(ndjson) : ndjson));
  }

  /**
   * Resolves once every event logged before the call is stored; rejects if the sender stopped, or
   * after `timeoutMs` if given (the sender goes on).
   */
  async flush(timeoutMs?: number): Promise<SenderStats> {
    this.throwIfStopped();
    const upTo = this.stats.logged;
    if (this.stats.events < upTo) {
      const done = new Promise<void>((resolve, reject) =>
        this.flushes.push({ upTo, resolve, reject }),
      );
      await (timeoutMs === undefined ? done : within(done, timeoutMs, () => this.notStored()));
    }
    return { ...this.stats };
  }

  /**
   * Refuses further events and flushes. With `timeoutMs`, a sender still not done by then gives up:
   * it stops trying (so that the process can exit) and rejects, saying how many events it did not
   * store.
   */
  async close(timeoutMs?: number): Promise<SenderStats> {
    this.closing = true;
    try {
      return await this.flush(timeoutMs);
    } catch (e) {
      if (!this.failure) this.abandon(e);
      throw e;
    } finally {
      this.onEnd();
    }
  }

  /** Events logged and not stored (still queued, in the request that is out, or not sent after a refusal). */
  get pending(): number {
    return this.stats.logged - this.stats.events;
  }

  private async enqueue(lines: Uint8Array[]): Promise<void> {
    if (this.closing) throw new Error(`the sender of run ${this.runId} is closed`);
    this.throwIfStopped();
    if (lines.length > 0) {
      // Queued before any wait, so that calls keep their order however their waits end.
      let bytes = 0;
      for (const line of lines) bytes += line.length + 1;
      this.queue.push({ lines, bytes, next: 0 });
      this.queuedBytes += bytes;
      this.stats.logged += lines.length;
      if (!this.sending) {
        this.sending = true;
        // After the caller's other events of this turn, so that events logged together go together.
        setImmediate(() => void this.sendAll());
      }
    }
    await new Promise((resolve) => setImmediate(resolve));
    while (this.queuedBytes > this.maxQueueBytes && this.failure === undefined)
      await new Promise<void>((resolve) => this.waitingForRoom.push(resolve));
    this.throwIfStopped();
  }

  /** Sends what is queued, one request at a time, until nothing is or the sender stops. */
  private async sendAll(): Promise<void> {
    try {
      while (this.queue.length > 0 && this.failure === undefined) {
        const { lines, bytes } = this.take();
        await this.deliver(lines, bytes);
        this.settle();
      }
    } finally {
      this.sending = false;
    }
  }

  /** One request, sent again while the server cannot be reached; a refusal stops the sender. */
  private async deliver(lines: Uint8Array[], bytes: number): Promise<void> {
    for (let outage = false; this.failure === undefined;) {
      this.inFlight = new AbortController();
      try {
        const request = { eventsBefore: this.stats.events, signal: this.inFlight.signal };
        const answer = await this.post(lines, request).finally(() => (this.inFlight = undefined));
        const s = this.stats;
        s.requests++;
        s.events += lines.length;
        s.bytes += bytes;
        s.accepted += answer.accepted;
        s.duplicates += answer.duplicates;
        s.retries += answer.retries;
        s.lastSeq = answer.lastSeq;
        if (outage) this.warn(`the server is back; events of run ${this.runId} are being sent`);
        return;
      } catch (error) {
        if (this.failure) return; // given up meanwhile (close's time limit): nothing more to do
        if (!transientFailure(error)) return this.stop(error);
        if (!outage)
          this.warn(
            `events of run ${this.runId} not sent (${String(error)}); they stay queued, ` +
              `tried again every ${this.retryIntervalMs / 1000} s`,
          );
        outage = true;
        this.stats.retries++;
        await new Promise<void>((resume) => {
          this.pause = { timer: setTimeout(resume, this.retryIntervalMs), resume };
        });
        this.pause = undefined;
      }
    }
  }

  /**
   * The next request's lines: whole `log` calls in order while they fit in maxRequestBytes (an
   * iteration logged at once is then never split between requests), else as much of the first as fits.
   */
  private take(): { lines: Uint8Array[]; bytes: number } {
    const lines: Uint8Array[] = [];
    let bytes = 0;
    while (this.queue.length > 0) {
      const logged = this.queue[0] as Logged;
      if (lines.length > 0 && logged.next === 0 && bytes + logged.bytes > this.maxRequestBytes)
        break;
      while (logged.next < logged.lines.length) {
        const line = logged.lines[logged.next] as Uint8Array;
        if (lines.length > 0 && bytes + line.length + 1 > this.maxRequestBytes) break;
        lines.push(line);
        bytes += line.length + 1;
        logged.next++;
      }
      if (logged.next < logged.lines.length) break;
      this.queue.shift();
    }
    this.queuedBytes -= bytes;
    return { lines, bytes };
  }

  /** After a request: wakes the log calls waiting for room and ends the flushes it completed. */
  private settle(): void {
    const waiting = this.waitingForRoom;
    this.waitingForRoom = [];
    for (const wake of waiting) wake();
    const failure = this.failure;
    this.flushes = this.flushes.filter((f) => {
      if (failure) f.reject(failure.error);
      else if (this.stats.events >= f.upTo) f.resolve();
      else return true;
      return false;
    });
  }

  /** Stops for good with `error`: nothing more is sent, and every waiting call is told. */
  private stop(error: unknown): void {
    this.failure ??= { error };
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.settle();
    this.onEnd();
  }

  /** Gives up: stops (the error `error`) and ends a wait for the server, so that the process can exit. */
  private abandon(error: unknown): void {
    this.stop(error);
    this.inFlight?.abort(error);
    if (this.pause) {
      clearTimeout(this.pause.timer);
      this.pause.resume();
    }
  }

  private notStored(): Error {
    return new Error(
      `events of run ${this.runId} not stored in time: ${this.pending} of ${this.stats.logged} ` +
        `logged are not (${this.pause ? 'the server cannot be reached' : 'still being sent'})`,
    );
  }

  private throwIfStopped(): void {
    if (this.failure) throw this.failure.error;
  }
}

/** `promise`, or a rejection with `timeout()` after `ms`. */
function within(promise: Promise<void>, ms: number, timeout: () => Error): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function positive(name: string, given: number | undefined, otherwise: number): number {
  if (given === undefined) return otherwise;
  if (!(Number.isFinite(given) && given > 0))
    throw new RangeError(`${name}: a positive number, got ${given}`);
  return given;
}
