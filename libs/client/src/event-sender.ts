import type { ClientEvent } from '@creditlab/events';
import type { AppendAnswer } from './creditlab-client';

const MiB = 2 ** 20;

export interface EventSenderOptions {
  /**
   * The largest request it makes, in bytes of NDJSON (one event larger than this goes alone): 32 MiB
   * by default, as the Python client's `max_request_bytes`.
   */
  maxRequestBytes?: number;
  /** Encoded events it holds before `log` waits for the server to catch up: 512 MiB by default. */
  maxQueueBytes?: number;
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
  retries: number;
  /** The run's last sequence number after the last request. */
  lastSeq: number;
}

/** One `log` call's events, one NDJSON line each (UTF-8, no newline), and how far requests took them. */
interface Logged {
  lines: Uint8Array[];
  next: number;
}

const NEWLINE = 0x0a;

/**
 * The background sender of one run's events, for a trainer that should not wait on the server at
 * every iteration. `log` encodes the events and returns; requests go out one at a time, each with
 * everything that queued while the one before was out (up to `maxRequestBytes`), so a trainer
 * slower than the server has each iteration sent alone, as it ends, and one faster than the server
 * has its iterations joined into fewer, larger requests, which the server ingests at a higher rate
 * (docs/events.md, "Throughput"). Events reach the server in the order logged.
 *
 * A request the server refuses (or that fails once its retries are spent) stops the sender: the
 * events from that request on are not sent, and `log`, `flush` and `close` throw the error.
 * Nothing is lost by a retry either way: the server stores each event id once.
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
  private readonly queue: Logged[] = [];
  private queuedBytes = 0;
  private sending = false;
  private closed = false;
  private failure: { error: unknown } | undefined;
  /** `flush` calls waiting for the events logged before them to be stored. */
  private flushes: { upTo: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  /** `log` calls waiting for the queue to shrink under `maxQueueBytes`. */
  private waitingForRoom: (() => void)[] = [];

  constructor(
    private readonly post: (lines: Uint8Array[]) => Promise<AppendAnswer>,
    readonly runId: string,
    options: EventSenderOptions = {},
  ) {
    this.maxRequestBytes = options.maxRequestBytes ?? 32 * MiB;
    this.maxQueueBytes = Math.max(options.maxQueueBytes ?? 512 * MiB, this.maxRequestBytes);
    if (!(this.maxRequestBytes > 0))
      throw new RangeError(`maxRequestBytes: a positive number, got ${options.maxRequestBytes}`);
  }

  /**
   * Queues `events` (encoded now, so changing the objects afterwards changes nothing sent) and
   * returns once they are queued: at once, unless more than `maxQueueBytes` is waiting, then when
   * the server has caught up that far.
   */
  async log(events: Iterable<ClientEvent>): Promise<void> {
    return this.enqueue(Array.from(events, (e) => Buffer.from(JSON.stringify(e))));
  }

  /**
   * Queues events already encoded as NDJSON (one JSON event per line; blank lines are skipped),
   * such as a file of them read as it is: they go as they are, and the server checks them.
   */
  async logNdjson(ndjson: string | Uint8Array): Promise<void> {
    return this.enqueue(ndjsonLines(typeof ndjson === 'string' ? Buffer.from(ndjson) : ndjson));
  }

  /** Resolves once every event logged before the call is stored; rejects if the sender stopped. */
  async flush(): Promise<SenderStats> {
    this.throwIfStopped();
    const upTo = this.stats.logged;
    if (this.stats.events < upTo)
      await new Promise<void>((resolve, reject) => this.flushes.push({ upTo, resolve, reject }));
    return { ...this.stats };
  }

  /** Flushes, then refuses further events. */
  async close(): Promise<SenderStats> {
    if (this.closed) {
      this.throwIfStopped();
      return { ...this.stats };
    }
    try {
      return await this.flush();
    } finally {
      this.closed = true;
    }
  }

  /** Events logged and not yet stored (those still queued, and those of the request that is out). */
  get pending(): number {
    return this.stats.logged - this.stats.events;
  }

  private async enqueue(lines: Uint8Array[]): Promise<void> {
    if (this.closed) throw new Error(`the sender of run ${this.runId} is closed`);
    this.throwIfStopped();
    if (lines.length === 0) return;
    // Queued before waiting for room, so that calls keep their order however their waits end.
    this.queue.push({ lines, next: 0 });
    for (const line of lines) this.queuedBytes += line.length + 1;
    this.stats.logged += lines.length;
    // On the next turn of the event loop, so that events logged together go in one request.
    if (!this.sending) {
      this.sending = true;
      setImmediate(() => void this.sendAll());
    }
    while (this.queuedBytes > this.maxQueueBytes && this.failure === undefined)
      await new Promise<void>((resolve) => this.waitingForRoom.push(resolve));
    this.throwIfStopped();
  }

  /** Sends what is queued, one request at a time, until nothing is or a request fails. */
  private async sendAll(): Promise<void> {
    try {
      while (this.queue.length > 0 && this.failure === undefined) {
        const { lines, bytes } = this.take();
        try {
          const answer = await this.post(lines);
          const s = this.stats;
          s.requests++;
          s.events += lines.length;
          s.bytes += bytes;
          s.accepted += answer.accepted;
          s.duplicates += answer.duplicates;
          s.retries += answer.retries;
          s.lastSeq = answer.lastSeq;
        } catch (error) {
          this.failure = { error };
          this.queue.length = 0;
          this.queuedBytes = 0;
        }
        this.settle();
      }
    } finally {
      this.sending = false;
    }
  }

  /** The next request's lines: queued events, in order, up to maxRequestBytes (one at least). */
  private take(): { lines: Uint8Array[]; bytes: number } {
    const lines: Uint8Array[] = [];
    let bytes = 0;
    while (this.queue.length > 0) {
      const logged = this.queue[0] as Logged;
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

  private throwIfStopped(): void {
    if (this.failure) throw this.failure.error;
  }
}

/** The non-blank lines of NDJSON bytes, as views of them (no copy). */
function ndjsonLines(bytes: Uint8Array): Uint8Array[] {
  const lines: Uint8Array[] = [];
  for (let start = 0; start < bytes.length;) {
    let end = bytes.indexOf(NEWLINE, start);
    if (end < 0) end = bytes.length;
    if (!blank(bytes, start, end)) lines.push(bytes.subarray(start, end));
    start = end + 1;
  }
  return lines;
}

/** Whether bytes[start, end) is only JSON whitespace (a carriage return of CRLF included). */
function blank(bytes: Uint8Array, start: number, end: number): boolean {
  for (let k = start; k < end; k++) {
    const b = bytes[k];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  }
  return true;
}
