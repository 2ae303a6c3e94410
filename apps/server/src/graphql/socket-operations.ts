import { findUnstorable, formatPath } from '@creditlab/events';
import {
  GraphQLError,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import type { Principal } from '../access/principal';
import { overLimitMessage, type RateLimits } from '../access/rate-limits';

/** What graphql-ws hands its hooks for one operation on a socket. */
export interface SocketOperation {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/**
 * The checks an operation on the graphql-ws socket gets before it runs, so that the socket is no
 * way around what HTTP enforces. Only subscriptions run there: queries and mutations are refused
 * (they belong on HTTP, where the cost limit, the per-request rate limit and the body limits
 * apply, and a socket would skip them). Each subscription counts as a request against the key's
 * rate limit, as an HTTP request does; its document is bounded in tokens as over HTTP, and its
 * variables must be text PostgreSQL can store. Errors go back for that operation only (an array
 * of GraphQLErrors), never by closing the socket; undefined lets graphql-ws go on with it.
 */
export async function refuseOnSocket(
  operation: SocketOperation,
  principal: Principal | undefined,
  limits: RateLimits,
  maxTokens: number,
): Promise<readonly GraphQLError[] | undefined> {
  // Parsed here (graphql-ws parses again, unbounded, after this hook) to bound it in tokens as over
  // HTTP, and so that a syntax error is an error for this operation, not the socket closed (4500).
  let document: DocumentNode;
  try {
    document = parse(operation.query, { maxTokens });
  } catch (e) {
    if (e instanceof GraphQLError) return [e];
    throw e;
  }
  const kind = getOperationAST(document, operation.operationName ?? undefined)?.operation;
  if (kind !== undefined && kind !== 'subscription')
    return [
      new GraphQLError(
        `a ${kind} is not served on the WebSocket, which carries subscriptions only: send it over HTTP (POST /graphql)`,
      ),
    ];
  const unstorable = findUnstorable(operation.variables ?? {});
  if (unstorable)
    return [
      new GraphQLError(`variable $${formatPath(unstorable.path)}: ${unstorable.message}`, {
        extensions: { code: 'BAD_USER_INPUT' },
      }),
    ];
  if (principal) {
    const rate = await limits.take(principal);
    if (!rate.allowed)
      return [
        new GraphQLError(overLimitMessage(principal, rate), {
          extensions: { code: 'RATE_LIMITED', retryAfterSeconds: rate.retryAfterSeconds },
        }),
      ];
  }
  return undefined;
}

/**
 * graphql-ws's validation with the rules HTTP adds to GraphQL's own (depth, fields expanded,
 * storable literals): graphql-ws validates with GraphQL's rules alone unless given this.
 */
export function socketValidation(rules: readonly ValidationRule[]) {
  return (schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] =>
    validate(schema, document, [...specifiedRules, ...rules]);
}
