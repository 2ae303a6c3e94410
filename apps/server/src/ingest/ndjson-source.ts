import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import split2 from 'split2';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { IncomingEvent } from './append-session';

export interface NdjsonLimits {
  maxLineBytes: number;
  maxRequestBytes: number;
}

/**
 * The request body as a stream of parsed NDJSON lines (split2 does the line
 * splitting, so a large request is never one string). Blank lines are skipped.
 * Throws DomainError: 400 for a line that is not JSON, 413 past the line or
 * request size limit, and an error if the body ends before the client finished
 * sending it (a cut connection must not look like a short request).
 */
export async function* ndjsonEvents(
  req: IncomingMessage,
  limits: NdjsonLimits,
): AsyncGenerator<IncomingEvent> {
  let tooLarge: DomainError | undefined;
  const counter = new ByteLimit(limits.maxRequestBytes, () => {
    tooLarge = new DomainError(
      ErrorCode.PayloadTooLarge,
      `request body exceeds ${limits.maxRequestBytes} bytes (CREDITLAB_MAX_REQUEST_BYTES); send it in several requests`,
      { limit: limits.maxRequestBytes },
    );
    return tooLarge;
  });
  const lines = split2({ maxLength: limits.maxLineBytes });
  req.pipe(counter).pipe(lines);
  req.on('error', (e) => lines.destroy(e));
  counter.on('error', (e) => lines.destroy(e));
  let position = 0;
  try {
    for await (const line of lines as AsyncIterable<string>) {
      position++;
      // split2's maxLength only bounds a line still waiting for its newline; a long line that arrives whole needs this check.
      if (line.length > limits.maxLineBytes / 3 && Buffer.byteLength(line) > limits.maxLineBytes)
        throw lineTooLong(position, limits);
      if (line.trim() === '') continue;
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
      yield { position, value };
    }
  } catch (e) {
    if (tooLarge) throw tooLarge;
    if (e instanceof DomainError) throw e;
    if (/maximum buffer/i.test((e as Error).message)) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `line ${position + 1} exceeds ${limits.maxLineBytes} bytes (CREDITLAB_MAX_LINE_BYTES); split the event into smaller ones`,
        { line: position + 1, limit: limits.maxLineBytes },
      );
    }
    throw e;
  }
  if (!req.complete) throw new Error('request body ended before the client finished sending it');
}

/** Passes bytes through until `limit`, then fails the stream with `onExceeded()`. */
class ByteLimit extends Transform {
  private seen = 0;
  constructor(
    private readonly limit: number,
    private readonly onExceeded: () => Error,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) done(this.onExceeded());
    else done(null, chunk);
  }
}

function lineTooLong(line: number, limits: NdjsonLimits): DomainError {
  return new DomainError(
    ErrorCode.PayloadTooLarge,
    `line ${line} exceeds ${limits.maxLineBytes} bytes (CREDITLAB_MAX_LINE_BYTES); split the event into smaller ones`,
    { line, limit: limits.maxLineBytes },
  );
}
