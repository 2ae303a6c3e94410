/**
 * Why the embedded PostgreSQL could not start, as one paragraph a person can act on: the step that
 * failed, the reason, and what to do about it. Start-up prints its message instead of a stack trace.
 */
export class EmbeddedPostgresError extends Error {
  constructor(
    /** What was being done, e.g. "initialising the data directory /var/lib/creditlab/pg". */
    readonly step: string,
    readonly reason: string,
    /** What the operator can do, as a sentence. */
    readonly remedy: string,
  ) {
    super(
      `The embedded PostgreSQL could not start: ${step} failed: ${withoutFinalStop(reason)}. ${remedy}`,
    );
    this.name = 'EmbeddedPostgresError';
  }
}

const withoutFinalStop = (s: string) => s.trim().replace(/\.$/, '');

/** The message of anything thrown (an Error, or whatever a library rejected with). */
export function reasonOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return e === undefined ? 'no reason given' : String(e);
}

/**
 * Runs one step of the start-up; a failure becomes an EmbeddedPostgresError naming the step and
 * the remedy (an EmbeddedPostgresError from a nested step passes through unchanged).
 */
export async function step<T>(what: string, remedy: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof EmbeddedPostgresError) throw e;
    throw new EmbeddedPostgresError(what, reasonOf(e), remedy);
  }
}

/** The remedy every failure can fall back on. */
export const OWN_POSTGRES = 'Or set DATABASE_URL to use a PostgreSQL of your own.';
