import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GqlExecutionContext } from '@nestjs/graphql';
import type { Request } from 'express';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { Role } from './api-key';
import { principalOf } from './authenticate';
import { describeKey, hasRole } from './principal';
import { REQUIRES } from './requires.decorator';

/** Checks the caller's role against the handler's `@Requires`. Project confinement is the services' job. */
@Injectable()
export class RolesGuard implements CanActivate {
  constructor(@Inject(Reflector) private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const needed = this.reflector.getAllAndOverride<Role | 'public' | undefined>(REQUIRES, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (needed === undefined) {
      throw new Error(
        `${context.getClass().name}.${context.getHandler().name} declares no @Requires; refusing to serve it`,
      );
    }
    if (needed === 'public') return true;
    const req =
      context.getType<string>() === 'graphql'
        ? GqlExecutionContext.create(context).getContext<{ req: Request }>().req
        : context.switchToHttp().getRequest<Request>();
    const principal = principalOf(req);
    if (!hasRole(principal, needed)) {
      const what =
        context.getType<string>() === 'graphql'
          ? GqlExecutionContext.create(context).getInfo<{ fieldName: string }>().fieldName
          : `${req.method} ${req.path}`;
      throw new DomainError(
        ErrorCode.Forbidden,
        `${what} needs ${needed === 'admin' ? 'an' : 'a'} ${needed} key; ${describeKey(principal)} has role ${principal.role}`,
      );
    }
    return true;
  }
}
