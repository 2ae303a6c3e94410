import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { createInterface, type Interface } from 'node:readline';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { IncomingEvent } from './append-session';

export interface NdjsonLimits {
  maxLineBytes: number;
  maxRequestBytes: number;
  /** A body that brings no new event for this long (blank lines do not count) is answered 408. */
  idleMs: number;
}

/**
 * The request body as a stream of parsed NDJSON lines (Node's readline does
 * the splitting, linear in the line length, so a request is never one string
 * and a 10 MB line is not rescanned per chunk). Blank lines are skipped.
 * Throws DomainError: 400 for a line that is not JSON, 413 past the line or
 * request size limit, 408 for a body that stalls, and an error if the body ends
 * before the client finished sending it (a cut connection must not look like a
 * short request).
 */
export async function* ndjsonEvents(
  req: IncomingMessage,
  limits: NdjsonLimits,
): AsyncGenerator<IncomingEvent> {
  const guard = new SizeGuard(limits);
  // Its failures are reported through `guard.failure` below; an 'error' with no listener left
  // (readline stops listening once closed) would end the process.
  guard.on('error', () => undefined);
  const lines = createInterface({ input: req.pipe(guard), crlfDelay: Infinity });
  req.on('error', (e) => guard.destroy(e));
  const idle = new IdleWatch(limits.idleMs, () => {
    guard.failure ??= new DomainError(
      ErrorCode.RequestTimeout,
      `no complete event arrived for ${limits.idleMs / 1000} s; send the body without pauses`,
      { idleSeconds: limits.idleMs / 1000 },
    );
    guard.destroy(guard.failure);
    lines.close();
  });
  let position = 0;
  try {
    for await (const line of heldLines(lines)) {
      position++;
      if (line.trim() === '') continue;
      if (guard.failure) break;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        throw new DomainError(
          ErrorCode.InvalidEvent,
          `line ${position}: not valid JSON: ${(e as Error).message}`,
          {
            line: position,
            path: '',
            reason: 'not valid JSON',
          },
        );
      }
      // The wait for the next event counts as idle; the time the consumer spends on this one does not.
      idle.pause();
      yield { position, value };
      idle.resume();
    }
  } finally {
    idle.stop();
    lines.close();
  }
  if (guard.failure) throw guard.failure;
  if (!req.complete) throw new Error('request body ended before the client finished sending it');
}

/** Lines read ahead of the consumer before the body is paused. */
const LINES_AHEAD = 4;

/**
 * The interface's lines with back-pressure: the body is paused while `LINES_AHEAD` lines wait for
 * the consumer, so a request is read only as fast as its events are stored. (readline's own async
 * iterator pauses only after 1024 lines: for events of a few hundred KB, most of a large request.)
 * Ends when the interface closes; its errors end it too (they are reported through the size guard).
 */
async function* heldLines(lines: Interface): AsyncGenerator<string> {
  const queue: string[] = [];
  let closed = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  lines.on('line', (line: string) => {
    queue.push(line);
    if (queue.length >= LINES_AHEAD) lines.pause();
    notify();
  });
  lines.on('close', () => {
    closed = true;
    notify();
  });
  lines.on('error', () => lines.close());
  for (;;) {
    const line = queue.shift();
    if (line !== undefined) {
      if (queue.length < LINES_AHEAD && !closed) lines.resume();
      yield line;
    } else if (closed) return;
    else await new Promise<void>((resolve) => (wake = resolve));
  }
}

/** Calls `onIdle` once when `ms` pass with the watch running and no `resume` in between. */
class IdleWatch {
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
 * Passes the body through while enforcing both limits as bytes arrive: the
 * request size, and the bytes since the last newline (so one endless line
 * cannot grow a buffer without bound).
 */
class SizeGuard extends Transform {
  failure: DomainError | undefined;
  private total = 0;
  private lineBytes = 0;
  private lines = 1;

  constructor(private readonly limits: NdjsonLimits) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.total += chunk.length;
    if (this.total > this.limits.maxRequestBytes) {
      return this.fail(
        new DomainError(
          ErrorCode.PayloadTooLarge,
          `request body exceeds ${this.limits.maxRequestBytes} bytes (CREDITLAB_MAX_REQUEST_BYTES); send it in several requests`,
          { limit: this.limits.maxRequestBytes },
        ),
        done,
      );
    }
    let from = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, from)) {
      if (this.lineBytes + nl - from > this.limits.maxLineBytes) break;
      this.lineBytes = 0;
      this.lines++;
      from = nl + 1;
    }
    this.lineBytes += chunk.length - from;
    if (this.lineBytes > this.limits.maxLineBytes)
      return this.fail(lineTooLong(this.lines, this.limits), done);
    done(null, chunk);
  }

  private fail(error: DomainError, done: TransformCallback): void {
    this.failure = error;
    done(error);
  }
}

function lineTooLong(line: number, limits: NdjsonLimits): DomainError {
  return new DomainError(
    ErrorCode.PayloadTooLarge,
    `line ${line} exceeds ${limits.maxLineBytes} bytes (CREDITLAB_MAX_LINE_BYTES); split the event into smaller ones`,
    { line, limit: limits.maxLineBytes },
  );
}
