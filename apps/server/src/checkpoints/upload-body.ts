import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { bodyWentQuiet, DomainError, ErrorCode } from '../errors/domain-error';
import { watchBodyIdle } from '../http/idle-watch';

/**
 * A checkpoint upload's bytes, whole (they are stored as one value): at most `limit` bytes (413),
 * and a body that brings no bytes for `idleMs` is answered 408, as an ingest body is, so that a
 * client that goes quiet mid-upload does not hold its connection and memory until Node's request
 * timeout.
 */
export async function uploadBody(
  req: IncomingMessage,
  limit: number,
  idleMs: number,
): Promise<Buffer> {
  // raw-body first: its 'data' listener must be there before the stream starts flowing.
  const body = getRawBody(req, { limit, length: req.headers['content-length'] });
  let quiet!: (e: DomainError) => void;
  const idle = new Promise<never>((_, reject) => (quiet = reject));
  const watch = watchBodyIdle(req, idleMs, () =>
    quiet(bodyWentQuiet('bytes of the checkpoint', idleMs)),
  );
  try {
    return await Promise.race([body, idle]);
  } catch (e) {
    if ((e as { type?: string }).type === 'entity.too.large')
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `checkpoint larger than ${limit} bytes (CREDITLAB_MAX_CHECKPOINT_BYTES)`,
      );
    throw e;
  } finally {
    watch.stop();
    body.catch(() => undefined); // after a 408 it fails when the connection closes: nobody waits
  }
}
