import { hasRole, type Principal } from '../access/principal';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { MethodRequest, SetStorage } from './advantage-sets.service';
import type { MethodInput } from './advantages.models';

/** Distinct (method, parameters) one GraphQL request may use: each can mean an estimator run per iteration. */
export const MAX_METHODS_PER_REQUEST = 12;

/** Counts a distinct (method, parameters) of this request; past the cap, the request is refused. */
export function countMethod(ctx: Record<string, unknown>, method: string, params: unknown): void {
  const seen = (ctx.methodsUsed ??= new Set<string>()) as Set<string>;
  seen.add(JSON.stringify([method, params]));
  if (seen.size > MAX_METHODS_PER_REQUEST)
    throw new DomainError(
      ErrorCode.InvalidInput,
      `a request may use at most ${MAX_METHODS_PER_REQUEST} distinct methods or parameter sets; split it`,
    );
}

/** What a caller's reads may store (see SetStorage): writers anything, readers default sets only. */
export function storageOf(caller: Principal): SetStorage {
  return hasRole(caller, 'write') ? 'any' : 'defaults-only';
}

export function toRequest(m: MethodInput): MethodRequest {
  return { name: m.name, params: m.params ?? {} };
}
