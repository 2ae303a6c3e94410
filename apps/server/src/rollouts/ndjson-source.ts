import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { IdleWatch } from '../http/idle-watch';
import { bodyCutShort, bodyWentQuiet, DomainError, ErrorCode } from '../errors/domain-error';
import type { IncomingEvent } from './append-session';

export interface NdjsonLimits {
  maxLineBytes: number;
  maxRequestBytes: number;
  /** A body that brings no new event for this long (blank lines do not count) is answered 408. */
  idleMs: number;
}

/**
 * The request body as a stream of parsed NDJSON lines (a line ends at \n, \r\n or a lone \r, as
 * with Node's readline, which did the splitting before). Blank lines are skipped.
 * Throws DomainError: 400 for a line that is not JSON (or not UTF-8), 413 past the line or
 * request size limit, 408 for a body that stalls, and an error if the body ends
 * before the client finished sending it (a cut connection must not look like a
 * short request).
 */
export async function* ndjsonEvents(
  req: IncomingMessage,
  limits: NdjsonLimits,
): AsyncGenerator<IncomingEvent> {
  for await (const piece of ndjsonLines(req, limits))
    for (const { position, text } of piece) yield { position, value: parseLine(position, text) };
}

/**
 * The request body's lines, undecoded as JSON, a piece at a time (the lines one chunk of the body
 * ended), for a reader that parses them elsewhere (prepare-thread.ts); the limits as ndjsonEvents.
 * A line that is not UTF-8 is passed on with no text, to be refused in its turn (parseLine).
 */
export async function* ndjsonLines(
  req: IncomingMessage,
  limits: NdjsonLimits,
): AsyncGenerator<BodyLine[]> {
  const lines = new LineSplitter(limits);
  req.on('error', () => lines.destroy(bodyCutShort()));
  req.pipe(lines);
  const idle = new IdleWatch(limits.idleMs, () => {
    lines.failure ??= bodyWentQuiet('complete event', limits.idleMs);
    lines.destroy(lines.failure);
  });
  try {
    // One hop of the stream per chunk of the body, not per line.
    for await (const piece of untilError(lines)) {
      if (lines.failure) break;
      // The wait for the next lines counts as idle; the time the consumer spends on these does not.
      idle.pause();
      yield piece;
      idle.resume();
    }
  } finally {
    idle.stop();
    lines.destroy();
  }
  if (lines.failure) throw lines.failure;
  // Whole only if the client sent all of it and every line was read: a connection that fails after
  // the last byte arrived (complete, yet lines still unread) must not pass for a shorter request.
  if (!req.complete || !lines.readableEnded) throw bodyCutShort();
}

/** A line's JSON value; a line that is not UTF-8 or not JSON is refused, naming the line. */
export function parseLine(position: number, text: string | null): unknown {
  if (text === null) throw notUtf8(position);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw notJson(position, (e as Error).message);
  }
}

export function notUtf8(position: number): DomainError {
  return new DomainError(
    ErrorCode.InvalidEvent,
    `line ${position}: not valid UTF-8; send the body as UTF-8`,
    { line: position, path: '', reason: 'not valid UTF-8' },
  );
}

export function notJson(position: number, message: string): DomainError {
  return new DomainError(ErrorCode.InvalidEvent, `line ${position}: not valid JSON: ${message}`, {
    line: position,
    path: '',
    reason: 'not valid JSON',
  });
}

/**
 * Pieces of the body whose lines are read ahead of the consumer before the body is paused, so that
 * a request is read only as fast as its events are stored (a piece is the lines a chunk of the body
 * ended; readline's async iterator paused only after 1024 lines: for events of a few hundred KB,
 * most of a large request).
 */
const PIECES_AHEAD = 4;

/** A line of the body with something on it, and its number (blank lines count, but are not passed on). */
export interface BodyLine {
  position: number;
  /** null: the line's bytes are not UTF-8 (decoding would put U+FFFD in their place, silently). */
  text: string | null;
}

/**
 * The splitter's pieces until it ends or fails; how it failed is reported after the loop (the size
 * and idle limits through `failure`, a cut connection by the splitter not having ended).
 */
async function* untilError(lines: LineSplitter): AsyncGenerator<BodyLine[]> {
  try {
    for await (const piece of lines) yield piece as BodyLine[];
  } catch {
    return;
  }
}

/**
 * The body cut into lines as its bytes arrive, each line decoded once it is complete, while both
 * limits are enforced: the request size, and the bytes of one line (so an endless line cannot grow
 * a buffer without bound). A line ends at \n, \r\n or a lone \r, found in the bytes with
 * Buffer.indexOf (native); readline's regular expression over the decoded text cost 3–4 µs per
 * ingested step with 256-d embeddings. A character cut between two chunks is whole again in its
 * line's bytes. Blank lines are counted and dropped here, so that a body of line ends alone costs a
 * counter, not a string and a queue entry each.
 */
class LineSplitter extends Transform {
  failure: DomainError | undefined;
  private total = 0;
  /** The bytes of the line being read, from earlier chunks. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** The number of the last line ended. */
  private position = 0;
  /** The last chunk ended with \r: a \n that starts the next one ends no line of its own. */
  private afterCr = false;

  constructor(private readonly limits: NdjsonLimits) {
    super({ readableObjectMode: true, readableHighWaterMark: PIECES_AHEAD });
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
    const lines: BodyLine[] = [];
    let from = this.afterCr && chunk[0] === LF ? 1 : 0;
    this.afterCr = false;
    let lf = chunk.indexOf(LF, from);
    let cr = chunk.indexOf(CR, from);
    while (lf !== -1 || cr !== -1) {
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
      if (this.partialBytes + end - from > this.limits.maxLineBytes)
        return this.fail(lineTooLong(this.position + 1, this.limits), done);
      this.endLine(chunk, from, end, lines);
      from = end + 1;
      if (end === cr) {
        if (from === chunk.length) this.afterCr = true;
        else if (chunk[from] === LF) from++;
      }
      if (lf !== -1 && lf < from) lf = chunk.indexOf(LF, from);
      if (cr !== -1 && cr < from) cr = chunk.indexOf(CR, from);
    }
    if (from < chunk.length) {
      this.partial.push(chunk.subarray(from));
      this.partialBytes += chunk.length - from;
      if (this.partialBytes > this.limits.maxLineBytes)
        return this.fail(lineTooLong(this.position + 1, this.limits), done);
    }
    if (lines.length > 0) this.push(lines);
    done();
  }

  override _flush(done: TransformCallback): void {
    const lines: BodyLine[] = [];
    if (this.partialBytes > 0) this.endLine(Buffer.alloc(0), 0, 0, lines);
    if (lines.length > 0) this.push(lines);
    done();
  }

  /** Ends the line being read at `chunk[end]`; adds it to `lines` unless blank. */
  private endLine(chunk: Buffer, start: number, end: number, lines: BodyLine[]): void {
    this.position++;
    let bytes: Buffer;
    if (this.partialBytes === 0) {
      if (end === start) return;
      bytes = chunk.subarray(start, end);
    } else {
      bytes = Buffer.concat([...this.partial, chunk.subarray(start, end)]);
      this.partial = [];
      this.partialBytes = 0;
    }
    // Checked before decoding, which would replace bad bytes with U+FFFD: two different bodies
    // would then store as one, and a retry of either would match the other.
    if (!isUtf8(bytes)) return void lines.push({ position: this.position, text: null });
    const text = bytes.toString('utf8');
    if (text.trim() !== '') lines.push({ position: this.position, text });
  }

  private fail(error: DomainError, done: TransformCallback): void {
    this.failure = error;
    done(error);
  }
}

const LF = 0x0a;
const CR = 0x0d;

function lineTooLong(line: number, limits: NdjsonLimits): DomainError {
  return new DomainError(
    ErrorCode.PayloadTooLarge,
    `line ${line} exceeds ${limits.maxLineBytes} bytes (CREDITLAB_MAX_LINE_BYTES); split the event into smaller ones`,
    { line, limit: limits.maxLineBytes },
  );
}
