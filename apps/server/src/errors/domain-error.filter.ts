import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { GraphQLError } from 'graphql';
import { DomainError, GRAPHQL_CODE } from './domain-error';
import { sendDomainError } from './send-domain-error';

/**
 * The one place domain errors meet transports: HTTP gets its status and a JSON
 * body with the code, message and details; GraphQL gets an error with
 * `extensions.code`.
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
    sendDomainError(http.getRequest<Request>(), http.getResponse<Response>(), error);
    return undefined;
  }
}
