import { DomainError, ErrorCode } from '../errors/domain-error';

const MIB = 1024 * 1024;

/**
 * The bytes of checkpoint uploads this process holds at once, all keys together. An upload is held
 * whole until it is stored (and takes two to three times its size while PostgreSQL receives it), so
 * the per-key cap alone let a few keys, each with its uploads in progress, take any amount of
 * memory. Each upload reserves its declared length, or the largest checkpoint when it declares
 * none, before a byte is read; one that does not fit is refused with 503 and Retry-After, which
 * both clients wait out and retry (an upload is idempotent).
 */
export class UploadMemory {
  private held = 0;

  constructor(private readonly budget: number) {}

  async hold<T>(bytes: number, work: () => Promise<T>): Promise<T> {
    if (this.held + bytes > this.budget)
      throw new DomainError(
        ErrorCode.ServerBusy,
        `the server holds ${mib(this.held)} of checkpoint uploads; ${mib(bytes)} more would pass CREDITLAB_CHECKPOINT_MEMORY_BYTES (${mib(this.budget)}): retry shortly`,
        // Uploads in progress take seconds; the clients retry after this many.
        { retryAfterSeconds: 2 },
      );
    this.held += bytes;
    try {
      return await work();
    } finally {
      this.held -= bytes;
    }
  }
}

const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;
