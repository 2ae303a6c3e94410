import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { DomainError } from '../apps/server/src/errors/domain-error';
import { ndjsonEvents, type NdjsonLimits } from '../apps/server/src/rollouts/ndjson-source';
import { ndjsonLines as clientLines } from '../libs/client/src/ndjson-lines';

/**
 * How a request body is cut into events: line ends, characters cut between network chunks,
 * blank lines and line numbers, the size limits, and a body cut short. The body arrives in the
 * chunks given, as a socket would deliver them.
 */
const LIMITS: NdjsonLimits = { maxLineBytes: 1 << 20, maxRequestBytes: 1 << 30, idleMs: 60_000 };

async function events(
  chunks: (string | Buffer)[],
  limits = LIMITS,
  complete = true,
): Promise<{ position: number; value: unknown }[]> {
  const body = Object.assign(new PassThrough(), { complete: false });
  void (async () => {
    for (const chunk of chunks) {
      body.write(chunk);
      await new Promise((r) => setImmediate(r)); // each chunk apart
    }
    body.complete = complete;
    body.end();
  })();
  const out: { position: number; value: unknown }[] = [];
  for await (const e of ndjsonEvents(body as unknown as IncomingMessage, limits)) out.push(e);
  return out;
}

async function failure(
  chunks: (string | Buffer)[],
  limits = LIMITS,
  complete = true,
): Promise<unknown> {
  return events(chunks, limits, complete).then(
    () => undefined,
    (e: unknown) => e,
  );
}

test('a line ends at \\n, \\r\\n or a lone \\r; the last may have no end; blank lines count', async () => {
  const got = await events(['{"a":1}\r\n\n{"a":2}\r{"a":3}\n', '  \n{"a":4}']);
  expect(got).toEqual([
    { position: 1, value: { a: 1 } },
    { position: 3, value: { a: 2 } },
    { position: 4, value: { a: 3 } },
    { position: 6, value: { a: 4 } },
  ]);
});

test('a line of blanks as String.trim sees them is skipped, whatever blanks; one that is not UTF-8 is refused', async () => {
  const got = await events([
    '\t\u000b\u000c \n\u00a0 \ufeff\u3000\n{"a":1}\n \u2028\u2029\n{"a":2}',
  ]);
  expect(got).toEqual([
    { position: 3, value: { a: 1 } },
    { position: 5, value: { a: 2 } },
  ]);
  // Past the blanks, what is not one is read: a letter beyond ASCII, bytes that are not UTF-8.
  expect(((await failure(['{"a":1}\n \u00e9\n'])) as Error).message).toMatch(
    /^line 2: not valid JSON/,
  );
  const notUtf8 = Buffer.concat([Buffer.from('\u00a0 '), Buffer.from([0xff]), Buffer.from('\n')]);
  expect(((await failure([notUtf8])) as Error).message).toBe(
    'line 1: not valid UTF-8; send the body as UTF-8',
  );
});

test('a line and its line end may arrive in pieces, a character cut in two bytes apart', async () => {
  const text = `{"s":"état 😀 ü"}\r\n{"s":"b"}\n`;
  const bytes = Buffer.from(text, 'utf8');
  // Every byte its own chunk: every character beyond ASCII is cut, and \r apart from its \n.
  const chunks = [...bytes].map((b) => Buffer.from([b]));
  expect(await events(chunks)).toEqual([
    { position: 1, value: { s: 'état 😀 ü' } },
    { position: 2, value: { s: 'b' } },
  ]);
});

test('a line that is not JSON is named by its number', async () => {
  const e = await failure(['{"a":1}\n\n{"a":\n']);
  expect(e).toBeInstanceOf(DomainError);
  expect((e as DomainError).message).toMatch(/^line 3: not valid JSON/);
});

test('a line whose bytes are not UTF-8 is named by its number, whether it came whole or in pieces', async () => {
  // FF FE never occur in UTF-8; C0 AF is an overlong "/". Decoding would make each U+FFFD, silently.
  for (const bad of [Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0xaf])]) {
    const line = Buffer.concat([Buffer.from('{"s":"A'), bad, Buffer.from('B"}\n')]);
    for (const chunks of [
      [Buffer.from('{"a":1}\n'), line],
      [...line].map((b) => Buffer.from([b])),
    ]) {
      const e = await failure(chunks);
      expect(e).toBeInstanceOf(DomainError);
      expect((e as DomainError).message).toBe(
        `line ${chunks.length === 2 ? 2 : 1}: not valid UTF-8; send the body as UTF-8`,
      );
    }
  }
});

test('a line past the line limit is refused with its number, also when no chunk alone is too long', async () => {
  const limits = { ...LIMITS, maxLineBytes: 10 };
  const e = await failure(['{"a":1}\n{"b":', '"0123', '456789"}\n'], limits);
  expect(e).toBeInstanceOf(DomainError);
  expect((e as DomainError).message).toMatch(/^line 2 exceeds 10 bytes/);
  // A line exactly at the limit passes, its line end not counted.
  expect(await events(['{"a":"12"}\r\n'], { ...limits, maxLineBytes: 11 })).toHaveLength(1);
});

test('a body past the request limit is refused', async () => {
  const e = await failure(['{"a":1}\n', '{"a":2}\n', '{"a":3}\n'], {
    ...LIMITS,
    maxRequestBytes: 20,
  });
  expect(e).toBeInstanceOf(DomainError);
  expect((e as DomainError).message).toMatch(/request body exceeds 20 bytes/);
});

test('a body that ends before the client finished is an error, not a short request', async () => {
  // Cut at a line end, so that what arrived reads as whole events.
  const e = await failure(['{"a":1}\n{"a":2}\n'], LIMITS, false);
  expect((e as Error).message).toMatch(/request body ended before the client finished/);
});

test('a body of line ends alone is counted through, not kept line by line (8 MB of lone \\r)', async () => {
  // Each \r ends a (blank) line. Kept one by one, this many lines took over a minute and gigabytes,
  // with the event loop blocked; counted, the event after them arrives with its number.
  const flood = Buffer.alloc(8 << 20, '\r');
  const chunks = [];
  for (let at = 0; at < flood.length; at += 65536) chunks.push(flood.subarray(at, at + 65536));
  expect(await events([...chunks, '{"a":1}\n'])).toEqual([
    { position: flood.length + 1, value: { a: 1 } },
  ]);
});

test('an event that ends at a lone \\r is passed on before the rest of the body arrives', async () => {
  const body = Object.assign(new PassThrough(), { complete: false });
  const stream = ndjsonEvents(body as unknown as IncomingMessage, LIMITS);
  body.write('{"a":1}\r');
  expect((await stream.next()).value).toEqual({ position: 1, value: { a: 1 } });
  body.write('{"a":2}\r\n');
  expect((await stream.next()).value).toEqual({ position: 2, value: { a: 2 } });
  body.complete = true;
  body.end();
  expect((await stream.next()).done).toBe(true);
});

test('a connection that fails after the whole body arrived, lines still unread, is an error', async () => {
  const body = Object.assign(new PassThrough(), { complete: false });
  const stream = ndjsonEvents(body as unknown as IncomingMessage, LIMITS);
  for (let i = 0; i < 50; i++) body.write(`{"a":${i}}\n`);
  body.complete = true; // every byte arrived …
  expect((await stream.next()).value).toEqual({ position: 1, value: { a: 0 } });
  body.destroy(new Error('socket hang up')); // … then the connection failed before the answer
  // Whether or not its lines were all read by then, the body never ended: nothing may be stored.
  const error = await (async () => {
    for await (const _event of stream);
  })().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((error as Error | undefined)?.message).toMatch(
    /request body ended before the client finished/,
  );
});

test('the client cuts NDJSON bytes into the very lines the server reads, whatever the line ends and blanks', async () => {
  // The client's sender splits bytes it is given (logNdjson) with its own splitter: the two must
  // not drift apart, or a file the server takes would reach it as other events.
  let seed = 7;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const ends = ['\n', '\r\n', '\r', '\r\r\n', '\n\r'];
  const blanks = ['', ' ', '\t', '\u000b\u000c', '\u00a0', '\u3000', '\u2028\u2029', ' \ufeff '];
  for (let body = 0; body < 200; body++) {
    let text = '';
    const sent: unknown[] = [];
    const lines = 1 + Math.floor(random() * 12);
    for (let line = 0; line < lines; line++) {
      if (random() < 0.3) text += pick(blanks) + pick(ends);
      const value = { n: sent.length, s: pick(['a', 'é', '象', '\u2028 in a string', '😀']) };
      sent.push(value);
      text += JSON.stringify(value);
      if (random() < 0.1) break; // the last line may have no line end
      text += pick(ends);
    }
    const bytes = Buffer.from(text);
    // The server reads the body in chunks cut anywhere, even inside a character or a \r\n.
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + Math.floor(random() * 16);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    const server = (await events(chunks)).map((e) => e.value);
    const client = clientLines(bytes).map((l) => JSON.parse(Buffer.from(l).toString()) as unknown);
    expect([text, client]).toEqual([text, server]);
    expect(server).toEqual(sent);
  }
});
