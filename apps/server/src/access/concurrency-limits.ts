import { DomainError, ErrorCode } from '../errors/domain-error';
import { describeKey, type Principal } from './principal';

/**
 * How many requests of one kind each key has in progress in this process, capped: one client
 * opening many slow uploads cannot take every ingest connection. Counted per process, like the
 * rate limit.
 */
export class ConcurrencyLimits {
  private readonly inProgress = new Map<string, number>();

  constructor(
    private readonly what: string,
    private readonly perKey: number,
  ) {}

  /** Runs `work` as one of the key's requests in progress, or refuses with 429 if it has too many. */
  async run<T>(principal: Principal, work: () => Promise<T>): Promise<T> {
    const release = this.enter(principal);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * Counts one more request of the key in progress, or refuses with 429 if it has too many; the
   * function returned counts it out (once, however often it is called). For work that outlives its
   * handler, such as a response streamed after the handler returned.
   */
  enter(principal: Principal): () => void {
    const n = this.inProgress.get(principal.keyId) ?? 0;
    if (n >= this.perKey) {
      throw new DomainError(
        ErrorCode.TooManyConcurrent,
        `${describeKey(principal)} already has ${n} ${this.what} in progress (the limit per key); wait for one to finish`,
        // A request in progress lasts milliseconds to seconds: the shortest wait a header can say.
        { limit: this.perKey, retryAfterSeconds: 1 },
      );
    }
    this.inProgress.set(principal.keyId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inProgress.get(principal.keyId) ?? 1) - 1;
      if (left > 0) this.inProgress.set(principal.keyId, left);
      else this.inProgress.delete(principal.keyId);
    };
  }
}
