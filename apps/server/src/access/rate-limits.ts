import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { describeKey, type Principal } from './principal';

export type RateDecision =
  | { allowed: true; limit: number; remaining: number }
  | { allowed: false; limit: number; retryAfterSeconds: number };

/**
 * Requests per minute per key, counted in this process (a fixed one-minute window per key). With
 * several server processes each counts its own requests: the limit protects a process from one
 * runaway client, it is not a quota.
 */
export class RateLimits {
  /** One limiter per distinct limit: keys share the default one unless they have their own. */
  private readonly limiters = new Map<number, RateLimiterMemory>();

  constructor(private readonly defaultPerMinute: number) {}

  async take(principal: Principal): Promise<RateDecision> {
    const limit = principal.rateLimitPerMinute ?? this.defaultPerMinute;
    let limiter = this.limiters.get(limit);
    if (!limiter) {
      limiter = new RateLimiterMemory({ points: limit, duration: 60 });
      this.limiters.set(limit, limiter);
    }
    try {
      const res = await limiter.consume(principal.keyId);
      return { allowed: true, limit, remaining: res.remainingPoints };
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      return {
        allowed: false,
        limit,
        retryAfterSeconds: Math.max(1, Math.ceil(e.msBeforeNext / 1000)),
      };
    }
  }
}

/** What a caller over its rate is told, over HTTP and on the socket alike. */
export function overLimitMessage(
  principal: Principal,
  rate: { limit: number; retryAfterSeconds: number },
): string {
  return `${describeKey(principal)} is over its limit of ${rate.limit} requests per minute; retry in ${rate.retryAfterSeconds} s`;
}
