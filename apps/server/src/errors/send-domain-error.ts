import type { Request, Response } from 'express';
import { DomainError, ErrorCode, GRAPHQL_CODE, HTTP_STATUS } from './domain-error';

/**
 * A domain error as an HTTP answer: its status and a JSON body with the code, message and details.
 * On /graphql the body also carries a GraphQL `errors` list, so that GraphQL clients show the
 * message of an answer given before GraphQL ran (no key, rate limited). A request whose body was
 * not read to its end has its connection closed rather than reused. An error whose details say
 * `retryAfterSeconds` (429s) sets `Retry-After`.
 */
export function sendDomainError(req: Request, res: Response, error: DomainError): void {
  const status = HTTP_STATUS[error.code];
  const unread = !req.complete;
  if (unread || error.code === ErrorCode.PayloadTooLarge) res.setHeader('Connection', 'close');
  // Clients (both of ours, and common HTTP libraries) wait this long before they retry a 429.
  const retryAfter = error.details.retryAfterSeconds;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  const body = { statusCode: status, error: error.code, message: error.message, ...error.details };
  res.status(status).json(
    req.path === '/graphql'
      ? {
          ...body,
          errors: [
            {
              message: error.message,
              extensions: { code: GRAPHQL_CODE[error.code], error: error.code },
            },
          ],
        }
      : body,
  );
  if (unread) res.on('finish', () => req.destroy());
}
