import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { DomainError } from '../apps/server/src/errors/domain-error';
import { ndjsonEvents, type NdjsonLimits } from '../apps/server/src/rollouts/ndjson-source';

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
