/** An error answer of the server (4xx, or 5xx once the retries it allowed are spent), with its JSON body. */
export class CreditlabApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    /** What the client adds to the server's message when it can tell more (see olderServerAdvice). */
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
