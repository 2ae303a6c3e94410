import { RateLimiterMemory } from 'rate-limiter-flexible';
import { DomainError, ErrorCode } from '../errors/domain-error';

/**
 * Lookups of keys that no one holds, counted per client address. The request rate is per key, so
 * a caller that makes up a new key for every request is rated by nothing, and each of its requests
 * costs a database round trip. Past `perMinute` such lookups, the address's keys are not looked up
 * for the rest of the minute (429); keys this process already knows keep working, so a client with
 * a valid key behind the same address is only refused if its key has to be looked up meanwhile.
 * In memory, per process, like the request rate. 0 turns it off (e.g. behind a proxy that
 * throttles, since every caller then shares the proxy's address).
 */
export class UnknownKeyThrottle {
  private readonly misses: RateLimiterMemory | undefined;

  constructor(private readonly perMinute: number) {
    this.misses =
      perMinute > 0 ? new RateLimiterMemory({ points: perMinute, duration: 60 }) : undefined;
  }

  /** Refuses (429) an address that has used up its lookups of unknown keys this minute. */
  async check(address: string | undefined): Promise<void> {
    if (!this.misses || address === undefined) return;
    const state = await this.misses.get(address);
    if (!state || state.consumedPoints < this.perMinute) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    throw new DomainError(
      ErrorCode.RateLimited,
      `more than ${this.perMinute} unrecognised API keys from ${address} in a minute: its keys are not looked up for ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    );
  }

  /** Counts a lookup that found no live key. */
  async missed(address: string | undefined): Promise<void> {
    if (!this.misses || address === undefined) return;
    // Over the limit it rejects: the next check refuses, which is all that is wanted here.
    await this.misses.consume(address).catch(() => undefined);
  }
}
