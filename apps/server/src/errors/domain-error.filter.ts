import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { GraphQLError } from 'graphql';
import { JSON_BODY_LIMIT_BYTES } from '../http/json-body';
import { DomainError, ErrorCode, GRAPHQL_CODE } from './domain-error';
import { publicError } from './internal-errors';
import { sendDomainError } from './send-domain-error';

/**
 * The one place errors meet transports. HTTP gets the status and a JSON body with the code,
 * message and details; GraphQL gets an error with `extensions.code`. Errors that are not the
 * caller's (a bug, a lost database) are reduced to what a caller may know (`publicError`).
 */
@Catch()
export class DomainErrorFilter implements ExceptionFilter {
  catch(thrown: unknown, host: ArgumentsHost): unknown {
    if (host.getType<string>() === 'graphql') {
      // Left to Apollo's formatError (graphql/format-error.ts), which sees every error of a response.
      if (!(thrown instanceof DomainError)) return thrown;
      return new GraphQLError(thrown.message, {
        extensions: { code: GRAPHQL_CODE[thrown.code], error: thrown.code, ...thrown.details },
      });
    }
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const error = tooLargeJson(publicError(thrown, req.id as string | undefined));
    if (error instanceof HttpException) {
      const status = error.getStatus();
      const body = error.getResponse();
      const message =
        typeof body === 'object' && body !== null && 'message' in body
          ? (body as { message: unknown }).message
          : error.message;
      res.status(status).json({
        statusCode: status,
        error: error.name
          .replace(/Exception$/, '')
          .replace(/([a-z])([A-Z])/g, '$1_$2')
          .toUpperCase(),
        message: Array.isArray(message) ? message.join('; ') : String(message),
      });
      return undefined;
    }
    if (res.headersSent) {
      res.destroy();
      return undefined;
    }
    sendDomainError(req, res, error as DomainError);
    return undefined;
  }
}

/**
 * The JSON body parser's refusal of a body over its limit (which Nest hands over as a bare 413
 * "request entity too large"), told with the limit and what to do instead.
 */
function tooLargeJson(error: DomainError | HttpException): DomainError | HttpException {
  if (!(error instanceof HttpException) || error.getStatus() !== 413) return error;
  return new DomainError(
    ErrorCode.PayloadTooLarge,
    `JSON body larger than ${JSON_BODY_LIMIT_BYTES} bytes, the limit for JSON requests; send rollouts as NDJSON events (POST /v1/runs/{id}/events)`,
    { limit: JSON_BODY_LIMIT_BYTES },
  );
}
