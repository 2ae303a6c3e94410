import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { DomainError, ErrorCode } from '../errors/domain-error';

/**
 * Lookups of keys that no one holds, counted per client address. The request rate is per key, so
 * a caller that makes up a new key for every request is rated by nothing, and each of its requests
 * costs a database round trip. Each lookup takes one of the address's `perMinute` before it runs
 * (so that requests in flight together cannot all pass) and gives it back when it finds a live
 * key; once they are used up, the address's keys are not looked up for the rest of the minute
 * (429), apart from keys that worked recently (the caller decides: see ApiKeysService). In memory,
 * per process, like the request rate. 0 turns it off (e.g. behind a proxy that throttles, since
 * every caller then shares the proxy's address).
 */
export class UnknownKeyThrottle {
  private readonly lookups: RateLimiterMemory | undefined;

  constructor(private readonly perMinute: number) {
    this.lookups =
      perMinute > 0 ? new RateLimiterMemory({ points: perMinute, duration: 60 }) : undefined;
  }

  /** Takes one lookup from the address's budget, or refuses (429) when none is left. */
  async take(address: string): Promise<void> {
    if (!this.lookups) return;
    try {
      await this.lookups.consume(address);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      const retryAfterSeconds = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
      throw new DomainError(
        ErrorCode.RateLimited,
        `more than ${this.perMinute} unrecognised API keys from this address in a minute: its keys are not looked up for ${retryAfterSeconds} s`,
        { retryAfterSeconds },
      );
    }
  }

  /** Gives a lookup back: it found a live key. */
  async refund(address: string): Promise<void> {
    await this.lookups?.reward(address, 1);
  }
}

/**
 * The address a client's lookups are counted under. An IPv4 address mapped into IPv6 counts as the
 * IPv4 one, and an IPv6 address by its /64 (what one subscriber is usually given, so that its 2^64
 * addresses share one budget). A socket already closed has no address any more: such requests share
 * one budget, rather than none (closing right after the request must not escape the count).
 */
export function clientAddress(address: string | undefined): string {
  if (address === undefined) return 'closed';
  const v4 = address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
  if (!v4.includes(':')) return v4;
  return `${ipv6Groups(v4).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, `::` expanded (a zone index dropped). */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros =
    tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''));
}
