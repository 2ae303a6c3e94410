import { DomainError, ErrorCode } from '../errors/domain-error';

/**
 * Something this process has a fixed amount of for one kind of request, all keys together (the
 * connections that exports hold). Work takes its
 * share before it starts and gives it back when it ends; work that does not fit is refused with
 * 503 and Retry-After, which both clients wait out and retry. (The per-key caps, ConcurrencyLimits,
 * bound one client; this bounds them all.)
 */
export class ProcessBudget {
  private held = 0;

  constructor(
    private readonly budget: number,
    /** The refusal's message, from what is held, what was asked for and the budget. */
    private readonly refusal: (held: number, asked: number, budget: number) => string,
    private readonly retryAfterSeconds: number,
  ) {}

  async hold<T>(amount: number, work: () => Promise<T>): Promise<T> {
    const release = this.enter(amount);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * Takes `amount` for work that ends later than a call returns (a download, until its answer
   * closes); returns what gives it back, which does so once however often it is called.
   */
  enter(amount = 1): () => void {
    if (this.held + amount > this.budget)
      throw new DomainError(ErrorCode.ServerBusy, this.refusal(this.held, amount, this.budget), {
        retryAfterSeconds: this.retryAfterSeconds,
      });
    this.held += amount;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= amount;
    };
  }
}
