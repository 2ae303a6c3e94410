import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import type { Request } from 'express';
import { principalOf } from './authenticate';

/** The calling key's principal, in a controller or a GraphQL resolver. */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext) => {
  const req =
    context.getType<string>() === 'graphql'
      ? GqlExecutionContext.create(context).getContext<{ req: Request }>().req
      : context.switchToHttp().getRequest<Request>();
  return principalOf(req);
});
