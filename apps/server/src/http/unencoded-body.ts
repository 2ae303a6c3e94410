import type { IncomingMessage } from 'node:http';
import { DomainError, ErrorCode } from '../errors/domain-error';

/**
 * Routes that read their body's bytes themselves (NDJSON ingest, checkpoint uploads) take it as
 * sent, uncompressed: a gzip body read as NDJSON was "not valid JSON" on line 1, and a checkpoint
 * would have been stored compressed and served back as if it were not.
 */
export function refuseEncodedBody(req: IncomingMessage): void {
  const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return;
  throw new DomainError(
    ErrorCode.UnsupportedMediaType,
    `Content-Encoding ${JSON.stringify(encoding)} is not accepted here; send the body uncompressed`,
    { contentEncoding: encoding },
  );
}
