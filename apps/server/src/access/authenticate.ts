import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { sendDomainError } from '../errors/send-domain-error';
import { bearerToken } from './api-key';
import type { ApiKeysService } from './api-keys.service';
import { describeKey, type Principal } from './principal';
import type { RateLimits } from './rate-limits';
import { isWebPageRequest } from '../web/web-requests';

/**
 * Probes and scrapes that carry no key: load balancers and Prometheus. Their controllers say
 * `@Requires('public')` too; so do the web app's pages and assets (reads outside the API paths,
 * `isWebPageRequest`). Everything else needs a key.
 */
export const PUBLIC_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Where `authenticate` leaves the principal: on the request object itself. */
type AuthenticatedRequest = { principal?: Principal };

/**
 * Authentication and the per-key request rate, once per HTTP request (GraphQL included), before
 * any route: a request without a live key, or over its key's rate, is answered here.
 * `credentialsFile`: where this server writes the key it creates on its first start (named in the
 * answer to a request without a key, so that the advice holds for this server's configuration).
 */
export function authenticate(
  keys: ApiKeysService,
  limits: RateLimits,
  credentialsFile: string,
): RequestHandler {
  const noKey = `send an API key as "Authorization: Bearer <key>"; this server wrote one to ${credentialsFile} on its first start (unless CREDITLAB_ADMIN_KEY was set), \`npm run -s admin -- env\` prints it as shell exports, and \`npm run admin -- create-key\` makes more`;
  return (req: Request, res: Response, next: NextFunction) => {
    if (PUBLIC_PATHS.has(req.path) || isWebPageRequest(req)) return next();
    const token = bearerToken(req.headers.authorization);
    if (!token) {
      sendDomainError(req, res, new DomainError(ErrorCode.Unauthenticated, noKey));
      return;
    }
    void (async () => {
      const principal = await keys.authenticate(token);
      if (!principal) {
        throw new DomainError(
          ErrorCode.Unauthenticated,
          'API key not recognised: mistyped, revoked, or for another server',
        );
      }
      const rate = await limits.take(principal);
      res.setHeader('RateLimit-Limit', String(rate.limit));
      if (!rate.allowed) {
        res.setHeader('Retry-After', String(rate.retryAfterSeconds));
        throw new DomainError(
          ErrorCode.RateLimited,
          `${describeKey(principal)} is over its limit of ${rate.limit} requests per minute; retry in ${rate.retryAfterSeconds} s`,
          { retryAfterSeconds: rate.retryAfterSeconds },
        );
      }
      res.setHeader('RateLimit-Remaining', String(rate.remaining));
      (req as AuthenticatedRequest).principal = principal;
    })().then(
      () => next(),
      (e: unknown) => (e instanceof DomainError ? sendDomainError(req, res, e) : next(e)),
    );
  };
}

/** The principal a request authenticated as, if any (for logs). */
export const attachedPrincipal = (req: object): Principal | undefined =>
  (req as AuthenticatedRequest).principal;

/** The principal the request authenticated as (set by `authenticate`). */
export function principalOf(req: Request): Principal {
  const principal = attachedPrincipal(req);
  if (!principal) throw new DomainError(ErrorCode.Unauthenticated, 'no API key on this request');
  return principal;
}
