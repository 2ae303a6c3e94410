import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { GraphQLError } from 'graphql';
import { DomainError, ErrorCode, GRAPHQL_CODE, HTTP_STATUS } from './domain-error';

/**
 * The one place domain errors meet transports: HTTP gets its status and a JSON
 * body with the code, message and details; GraphQL gets an error with
 * `extensions.code`. A rejected ingest request may not have been read to its
 * end, so that connection is closed rather than reused.
 */
@Catch(DomainError)
export class DomainErrorFilter implements ExceptionFilter {
  catch(error: DomainError, host: ArgumentsHost): unknown {
    if (host.getType<string>() === 'graphql') {
      return new GraphQLError(error.message, {
        extensions: { code: GRAPHQL_CODE[error.code], error: error.code, ...error.details },
      });
    }
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const unread = !req.complete;
    if (unread || error.code === ErrorCode.PayloadTooLarge) res.setHeader('Connection', 'close');
    res.status(HTTP_STATUS[error.code]).json({
      statusCode: HTTP_STATUS[error.code],
      error: error.code,
      message: error.message,
      ...error.details,
    });
    if (unread) res.on('finish', () => req.destroy());
    return undefined;
  }
}
