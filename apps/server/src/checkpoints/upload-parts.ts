import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { bodyCutShort, bodyWentQuiet, DomainError, ErrorCode } from '../errors/domain-error';
import { IdleWatch } from '../http/idle-watch';

/** Bytes per part stored in the database: what an upload holds while it reads, and a download per read. */
export const CHECKPOINT_PART_BYTES = 1024 * 1024;

/**
 * Stores part `ord` of an upload. `bytes` is a view of the upload's one part buffer, filled again
 * once the promise resolves: the next bytes are not read until then.
 */
export type PartSink = (ord: number, bytes: Buffer) => Promise<void>;

/**
 * Where one upload's bytes go as they arrive: parts in the database (CheckpointParts), or an object
 * in a bucket (CheckpointBucket).
 */
export interface CheckpointUpload {
  /** Bytes per part `write` takes (the last may be shorter). */
  readonly partBytes: number;
  write: PartSink;
  /** After the last part: the object's URL, or null for parts in the database. */
  complete(): Promise<string | null>;
  /** The upload will not be a checkpoint: its bytes are deleted. */
  discard(): Promise<void>;
}

export interface ReceivedUpload {
  sha256: string;
  bytes: number;
}

/**
 * Reads a checkpoint upload's body and hands it on in parts of `partBytes` as they fill,
 * hashing it on the way: an upload holds one part, not the checkpoint, whatever its size. Refused:
 * more than `limit` bytes (413; a declared length past it before any byte is read) and a body that
 * brings no bytes for `idleMs` (408, as an ingest body), counted only while the server waits for
 * the client, not while a part is being stored.
 */
export async function receiveInParts(
  req: IncomingMessage,
  limits: { limit: number; idleMs: number; partBytes: number },
  store: PartSink,
): Promise<ReceivedUpload> {
  const { limit, idleMs, partBytes } = limits;
  if (Number(req.headers['content-length']) > limit) throw tooLarge(limit);
  const hash = createHash('sha256');
  // Chunks are copied into one buffer per upload. Kept as they came, each chunk costs its own
  // object, and a body sent in chunks of one byte took 185 bytes of memory per byte (helper's probe).
  const part = Buffer.allocUnsafe(Math.min(partBytes, limit));
  let filled = 0;
  let received = 0;
  let ord = 0;

  // Each read waits for the next chunk or for the body to go quiet. One long-lived "quiet" promise
  // raced against every read kept each race, and so each chunk, reachable until the body ended: an
  // upload held all of its bytes in memory however it stored them.
  let wentQuiet: DomainError | undefined;
  let failRead: ((e: DomainError) => void) | undefined;
  const watch = new IdleWatch(idleMs, () => {
    wentQuiet = bodyWentQuiet('bytes of the checkpoint', idleMs);
    failRead?.(wentQuiet);
  });
  const chunks = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const nextChunk = () =>
    new Promise<IteratorResult<Buffer>>((resolve, reject) => {
      if (wentQuiet) return reject(wentQuiet);
      failRead = reject;
      chunks.next().then(resolve, () =>
        // The client closed the connection mid-body (a read left pending by a 408 fails this way
        // too, into a promise already settled). Not a lost database connection, as its ECONNRESET
        // would have been reported.
        reject(bodyCutShort()),
      );
    });

  const storePart = async () => {
    const bytes = part.subarray(0, filled);
    hash.update(bytes);
    watch.pause(); // the client waits on the server now, not the other way round
    await store(ord++, bytes);
    watch.resume();
    filled = 0;
  };

  try {
    for (;;) {
      const { done, value } = await nextChunk();
      if (done) break;
      watch.resume();
      received += value.length;
      if (received > limit) throw tooLarge(limit);
      for (let at = 0; at < value.length;) {
        const copied = value.copy(part, filled, at);
        filled += copied;
        at += copied;
        if (filled === part.length) await storePart();
      }
    }
    if (filled > 0) await storePart();
    return { sha256: hash.digest('hex'), bytes: received };
  } finally {
    watch.stop();
  }
}

const tooLarge = (limit: number) =>
  new DomainError(
    ErrorCode.PayloadTooLarge,
    `checkpoint larger than ${limit} bytes (CREDITLAB_MAX_CHECKPOINT_BYTES)`,
  );
