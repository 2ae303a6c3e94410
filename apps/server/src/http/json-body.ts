import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { parse as parseContentType } from 'content-type';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import { isUtf8 } from 'node:buffer';
import { bodyCutShort, bodyWentQuiet, DomainError, ErrorCode } from '../errors/domain-error';
import { sendDomainError } from '../errors/send-domain-error';
import { watchBodyIdle } from './idle-watch';

/** The largest JSON request body (run creation, GraphQL, advantages): large data goes as NDJSON. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/** Requests whose JSON body the framework parses: JSON content type, not a raw-body route. */
export function parsesJsonBody(req: IncomingMessage): boolean {
  const type = mediaType(req);
  if (!(type === 'application/json' || type.endsWith('+json'))) return false;
  // On the path as Express routes it: case-insensitive (/V1/runs/…/Checkpoints/… reaches the same
  // handler), and from an absolute-form request target (PUT http://host/v1/…) too.
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  return !(req.method === 'PUT' && /^\/v1\/runs\/[^/]+\/checkpoints\//i.test(path));
}

/**
 * body-parser's `verify`: a UTF-8 body must be UTF-8. Decoded as it is, each bad byte would become
 * U+FFFD, so that two different bodies were stored as one text (as NDJSON lines are refused too).
 */
export function verifyUtf8(req: IncomingMessage, _res: unknown, body: Buffer): void {
  const charset = declaredCharset(req);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return; // body-parser checks the rest
  if (!isUtf8(body))
    throw Object.assign(
      new Error('body: not valid UTF-8; send JSON as UTF-8 (or name its charset, e.g. utf-16)'),
      { status: 400, type: 'entity.not.utf8' },
    );
}

/** The charset as body-parser reads it (quoted parameters too), so that the two cannot disagree. */
function declaredCharset(req: IncomingMessage): string | undefined {
  try {
    return parseContentType(req).parameters.charset?.toLowerCase();
  } catch {
    return undefined; // a header content-type cannot parse: body-parser takes it as no charset too
  }
}

/**
 * Goes just before the JSON parser. A JSON body that brings no bytes for `idleMs` is answered 408,
 * as an ingest body or a checkpoint upload is: a client with a key could otherwise hold its
 * connection by trickling a body until Node's request timeout (5 minutes). And a body whose
 * declared length is over the limit is answered 413 at once, where the parser would read it first.
 */
export function jsonBodyGuards(idleMs: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!parsesJsonBody(req)) return next();
    if (Number(req.headers['content-length']) > JSON_BODY_LIMIT_BYTES)
      return sendDomainError(req, res, tooLarge());
    if (req.complete) return next();
    // The parser first: it attaches its own 'data' listener in this same tick.
    next();
    watchBodyIdle(req, idleMs, () =>
      sendDomainError(req, res, bodyWentQuiet('bytes of the JSON body', idleMs)),
    );
  };
}

/**
 * body-parser's refusals as the API's errors, saying what to send instead: without this they
 * reached the caller as `"error":"HTTP"` with body-parser's own words ("incorrect header check").
 */
export function jsonBodyErrors() {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    const e = err as { type?: string; status?: number; message?: string; charset?: string };
    const error = fromBodyParser(e, req);
    // Answered already (a 408 for a body that went quiet, whose end the parser then reports).
    if (error && res.headersSent) res.destroy();
    else if (error) sendDomainError(req, res, error);
    else next(err);
  };
}

function fromBodyParser(
  e: { type?: string; status?: number; message?: string; charset?: string },
  req: Request,
): DomainError | undefined {
  const encoding = req.headers['content-encoding'];
  switch (e.type) {
    case 'entity.parse.failed':
      return new DomainError(ErrorCode.InvalidInput, `body: not valid JSON (${e.message})`);
    case 'entity.not.utf8':
      return new DomainError(ErrorCode.InvalidInput, e.message ?? 'body: not valid UTF-8');
    case 'entity.too.large':
      return tooLarge();
    case 'request.aborted':
      return bodyCutShort();
    case 'charset.unsupported':
      return new DomainError(
        ErrorCode.UnsupportedMediaType,
        `charset ${JSON.stringify(e.charset ?? '')} is not accepted for JSON; send UTF-8`,
        { charset: e.charset },
      );
    case 'encoding.unsupported':
      return new DomainError(
        ErrorCode.UnsupportedMediaType,
        `Content-Encoding ${JSON.stringify(encoding ?? '')} is not accepted; send gzip, deflate, br or no encoding`,
        { contentEncoding: encoding },
      );
  }
  // The body did not decompress as its Content-Encoding says (zlib's error, no type of its own).
  if (e.status === 400 && e.type === undefined && encoding)
    return new DomainError(
      ErrorCode.InvalidInput,
      `body: not valid ${encoding} (${e.message}); send it compressed as Content-Encoding says, or uncompressed without that header`,
    );
  return undefined;
}

function tooLarge(): DomainError {
  return new DomainError(
    ErrorCode.PayloadTooLarge,
    `JSON body larger than ${JSON_BODY_LIMIT_BYTES} bytes, the limit for JSON requests; send rollouts as NDJSON events (POST /v1/runs/{id}/events)`,
    { limit: JSON_BODY_LIMIT_BYTES },
  );
}

/**
 * A route's JSON body. A body sent with another content type (`text/plain`, none) is not parsed,
 * and was taken as missing ("body: required object is missing"): it is refused with 415 saying
 * what to send.
 */
export const JsonBody = createParamDecorator((_: unknown, ctx: ExecutionContext): unknown => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const sent =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
  if (sent && !parsesJsonBody(req)) {
    const type = mediaType(req);
    throw new DomainError(
      ErrorCode.UnsupportedMediaType,
      `send the body as JSON with Content-Type: application/json (got ${type ? JSON.stringify(type) : 'no Content-Type'})`,
      { contentType: type || null },
    );
  }
  return req.body as unknown;
});

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}
