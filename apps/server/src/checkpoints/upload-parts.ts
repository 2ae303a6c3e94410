import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { bodyWentQuiet, DomainError, ErrorCode } from '../errors/domain-error';
import { IdleWatch } from '../http/idle-watch';

/** Bytes per stored part: what an upload holds while it reads, and a download per read. */
export const CHECKPOINT_PART_BYTES = 1024 * 1024;

/**
 * Stores part `ord` of an upload, `bytes` bytes given as the pieces they arrived in (joining them
 * would copy every byte once more); the next bytes are not read until it resolves.
 */
export type PartSink = (ord: number, pieces: readonly Buffer[], bytes: number) => Promise<void>;

export interface ReceivedUpload {
  sha256: string;
  bytes: number;
}

/**
 * Reads a checkpoint upload's body and hands it on in parts of `CHECKPOINT_PART_BYTES` as they fill,
 * hashing it on the way: an upload holds one part, not the checkpoint, whatever its size. Refused:
 * more than `limit` bytes (413; a declared length past it before any byte is read) and a body that
 * brings no bytes for `idleMs` (408, as an ingest body), counted only while the server waits for
 * the client, not while a part is being stored.
 */
export async function receiveInParts(
  req: IncomingMessage,
  limits: { limit: number; idleMs: number },
  store: PartSink,
): Promise<ReceivedUpload> {
  const { limit, idleMs } = limits;
  if (Number(req.headers['content-length']) > limit) throw tooLarge(limit);
  const hash = createHash('sha256');
  let received = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
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
      // A read left pending by a 408 fails when the connection closes, into a promise already settled.
      chunks.next().then(resolve, reject);
    });

  const storePending = async () => {
    watch.pause(); // the client waits on the server now, not the other way round
    await store(ord++, pending, pendingBytes);
    watch.resume();
    pending = [];
    pendingBytes = 0;
  };

  try {
    for (;;) {
      const { done, value } = await nextChunk();
      if (done) break;
      watch.resume();
      received += value.length;
      if (received > limit) throw tooLarge(limit);
      hash.update(value);
      // Cut where a part fills: views of the chunk, not copies.
      let rest = value;
      while (pendingBytes + rest.length >= CHECKPOINT_PART_BYTES) {
        const fits = CHECKPOINT_PART_BYTES - pendingBytes;
        pending.push(rest.subarray(0, fits));
        pendingBytes += fits;
        rest = rest.subarray(fits);
        await storePending();
      }
      if (rest.length > 0) {
        pending.push(rest);
        pendingBytes += rest.length;
      }
    }
    if (pendingBytes > 0) await storePending();
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
