import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CHECKPOINT_PART_BYTES, receiveInParts } from '../src/checkpoints/upload-parts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CHUNK = 64 * 1024;

/** A request body of `chunks`, as the server's request stream gives it. */
function body(chunks: AsyncIterable<Buffer>, headers: Record<string, string> = {}) {
  return Object.assign(Readable.from(chunks, { objectMode: false }), {
    headers,
  }) as unknown as IncomingMessage;
}

test('parts are cut at 1 MiB whatever the chunks, in order, byte for byte, with the digest of the whole', async () => {
  const data = randomBytes(2 * CHECKPOINT_PART_BYTES + 12345);
  // Chunks of odd sizes, so that part boundaries fall inside them.
  async function* chunks() {
    for (let at = 0, i = 0; at < data.length; i++) {
      const size = [1, 70_000, 333, 1_000_001][i % 4] as number;
      yield data.subarray(at, at + size);
      at += size;
    }
  }
  const parts: { ord: number; bytes: number; joined: Buffer }[] = [];
  const received = await receiveInParts(
    body(chunks()),
    { limit: data.length, idleMs: 30_000, partBytes: CHECKPOINT_PART_BYTES },
    async (ord, bytes) => {
      // A copy: the view is of a buffer filled again once this resolves.
      parts.push({ ord, bytes: bytes.length, joined: Buffer.from(bytes) });
    },
  );
  expect(parts.map((p) => [p.ord, p.bytes, p.joined.length])).toEqual([
    [0, CHECKPOINT_PART_BYTES, CHECKPOINT_PART_BYTES],
    [1, CHECKPOINT_PART_BYTES, CHECKPOINT_PART_BYTES],
    [2, 12345, 12345],
  ]);
  expect(Buffer.concat(parts.map((p) => p.joined)).equals(data)).toBe(true);
  expect(received).toEqual({
    bytes: data.length,
    sha256: createHash('sha256').update(data).digest('hex'),
  });
});

test('bytes already stored are not held: an upload keeps a part in memory, not everything it read', async () => {
  let firstChunk!: WeakRef<Buffer>;
  let collectedMidway: boolean | undefined;
  async function* chunks(): AsyncGenerator<Buffer> {
    let first: Buffer | undefined = Buffer.alloc(CHUNK, 1);
    firstChunk = new WeakRef(first);
    yield first;
    first = undefined;
    // Two parts more: the first chunk's part is stored by then.
    for (let i = 0; i < (2 * CHECKPOINT_PART_BYTES) / CHUNK; i++) yield Buffer.alloc(CHUNK, 2);
    await new Promise((resolve) => setImmediate(resolve)); // WeakRefs hold for the current job
    gc();
    collectedMidway = firstChunk.deref() === undefined;
    yield Buffer.alloc(CHUNK, 3);
  }
  const stored: number[] = [];
  await receiveInParts(
    body(chunks()),
    { limit: 4 * CHECKPOINT_PART_BYTES, idleMs: 30_000, partBytes: CHECKPOINT_PART_BYTES },
    async (ord) => {
      stored.push(ord);
    },
  );
  expect(stored).toEqual([0, 1, 2]);
  expect(collectedMidway).toBe(true);
});

test('more bytes than the limit are refused, declared or sent', async () => {
  async function* chunks() {
    for (let i = 0; i < 4; i++) yield Buffer.alloc(CHUNK);
  }
  const limits = { limit: 3 * CHUNK, idleMs: 30_000, partBytes: CHECKPOINT_PART_BYTES };
  const none = async () => undefined;
  await expect(
    receiveInParts(body(chunks(), { 'content-length': String(4 * CHUNK) }), limits, none),
  ).rejects.toMatchObject({ message: expect.stringContaining('CREDITLAB_MAX_CHECKPOINT_BYTES') });
  await expect(receiveInParts(body(chunks()), limits, none)).rejects.toMatchObject({
    message: `checkpoint larger than ${3 * CHUNK} bytes (CREDITLAB_MAX_CHECKPOINT_BYTES)`,
  });
});
