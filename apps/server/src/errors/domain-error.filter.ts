import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { GraphQLError } from 'graphql';
import { DomainError, GRAPHQL_CODE } from './domain-error';
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
    const error = publicError(thrown, req.id as string | undefined);
    // Answered already (a stream cut short, a body refused before it ended): nothing more to say.
    if (res.headersSent) {
      res.destroy();
      return undefined;
    }
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
    sendDomainError(req, res, error as DomainError);
    return undefined;
  }
}
