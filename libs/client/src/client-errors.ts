/** An error answer of the server (4xx, or 5xx once the retries it allowed are spent), with its JSON body. */
export class CreditlabApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    /** What the client adds to the server's message when it can tell more (see refusalWithAdvice). */
    readonly advice?: string,
  ) {
    super(
      `${status} ${String(body.error ?? '')}: ${String(body.message ?? JSON.stringify(body))}` +
        (advice ? `; ${advice}` : ''),
    );
  }
}

export interface GraphQLErrorItem {
  message: string;
  extensions?: { code?: string } & Record<string, unknown>;
}

/** GraphQL errors of an answer; `codes` are their `extensions.code` (NOT_FOUND, FORBIDDEN, ...). */
export class CreditlabGraphQLError extends Error {
  readonly codes: string[];
  constructor(readonly errors: GraphQLErrorItem[]) {
    super(errors.map((e) => e.message).join('; '));
    this.codes = errors.map((e) => e.extensions?.code ?? 'UNKNOWN');
  }
}

/**
 * 429: refused before any route ran (this key's request rate), so always safe to repeat; 5xx: the
 * server failed, perhaps after acting, so repeated only when repeating is harmless. Not a statement
 * the server stopped at its time limit (STATEMENT_TIMEOUT): the same request would hold a database
 * connection as long again, and retries of heavy reads would pile up on a server already loaded.
 */
export const retryable = (
  status: number,
  body: Record<string, unknown>,
  idempotent: boolean,
): boolean => status === 429 || (idempotent && status >= 500 && body.error !== 'STATEMENT_TIMEOUT');

/**
 * Whether the failure of an idempotent request is one that sending it again later may cure: the
 * server could not be reached (fetch's TypeError, with its cause) or answered as `retryable` says.
 * Anything else (a refusal, a URL that does not parse, an answer that is not JSON) would recur.
 */
export function transientFailure(e: unknown): boolean {
  if (e instanceof CreditlabApiError) return retryable(e.status, e.body, true);
  return e instanceof TypeError && e.cause !== undefined;
}
