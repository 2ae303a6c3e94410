import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { sendDomainError } from '../errors/send-domain-error';
import { bearerToken } from './api-key';
import type { ApiKeysService } from './api-keys.service';
import { clientAddress } from './unknown-key-throttle';
import type { Principal } from './principal';
import { overLimitMessage, type RateLimits } from './rate-limits';
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
  return (req: Request, res: Response, next: NextFunction) => {
    if (PUBLIC_PATHS.has(req.path) || isWebPageRequest(req)) return next();
    const token = bearerToken(req.headers.authorization);
    if (!token) {
      // A proxy on this machine forwards others' requests from loopback: they say so in a header.
      const proxied = PROXY_HEADERS.some((h) => req.headers[h] !== undefined);
      const local = isLoopback(req.socket.remoteAddress) && !proxied;
      const advice = noKeyAdvice(credentialsFile, local);
      sendDomainError(req, res, new DomainError(ErrorCode.Unauthenticated, advice));
      return;
    }
    void (async () => {
      const principal = await keys.authenticate(token, clientAddress(req.socket.remoteAddress));
      if (!principal) {
        throw new DomainError(
          ErrorCode.Unauthenticated,
          'API key not recognised: mistyped, revoked, or for another server',
        );
      }
      const rate = await limits.take(principal);
      res.setHeader('RateLimit-Limit', String(rate.limit));
      if (!rate.allowed) {
        throw new DomainError(ErrorCode.RateLimited, overLimitMessage(principal, rate), {
          retryAfterSeconds: rate.retryAfterSeconds,
        });
      }
      res.setHeader('RateLimit-Remaining', String(rate.remaining));
      (req as AuthenticatedRequest).principal = principal;
    })().then(
      () => next(),
      (e: unknown) => (e instanceof DomainError ? sendDomainError(req, res, e) : next(e)),
    );
  };
}

/**
 * What a request without a key is told. Where the server keeps its first key is for callers on
 * the server's own machine, who can read it; anyone else learns nothing of its file system.
 */
export function noKeyAdvice(credentialsFile: string, fromThisMachine: boolean): string {
  const send = 'send an API key as "Authorization: Bearer <key>"';
  if (!fromThisMachine)
    return `${send}; ask the server's operator for one (\`npm run admin -- create-key\` on the server makes them)`;
  return `${send}; this server wrote one to ${credentialsFile} on its first start (unless CREDITLAB_ADMIN_KEY was set), \`npm run -s admin -- env\` prints it as shell exports, and \`npm run admin -- create-key\` makes more`;
}

/** Whether a peer address is this machine's loopback (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** Headers reverse proxies add (nginx's usual setup sends X-Real-IP, others Forwarded or Via). */
const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip', 'via'];

/** The principal a request authenticated as, if any (for logs). */
export const attachedPrincipal = (req: object): Principal | undefined =>
  (req as AuthenticatedRequest).principal;

/** The principal the request authenticated as (set by `authenticate`). */
export function principalOf(req: Request): Principal {
  const principal = attachedPrincipal(req);
  if (!principal) throw new DomainError(ErrorCode.Unauthenticated, 'no API key on this request');
  return principal;
}
