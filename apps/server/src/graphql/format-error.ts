import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { DomainError, GRAPHQL_CODE } from '../errors/domain-error';
import { publicError } from '../errors/internal-errors';

/** Codes whose messages are about the caller's document or variables: shown as they are. */
const CALLER_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'QUERY_TOO_COSTLY',
]);

/**
 * Every error of a GraphQL response passes here. Domain errors (already mapped by the exception
 * filter) and errors about the request keep their message; anything else a resolver threw — a
 * Prisma or SQL error, a bug — becomes what a caller may know: "database unavailable" or a bare
 * internal error naming nothing inside. Never a stack trace, in any NODE_ENV.
 */
export function formatError(
  formatted: GraphQLFormattedError,
  error: unknown,
): GraphQLFormattedError {
  const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
  const code = extensions.code as string | undefined;
  if (extensions.error !== undefined || (code && CALLER_CODES.has(code)))
    return { ...formatted, extensions };
  const original = unwrapResolverError(error);
  // graphql-js's own errors (no original error): about the schema or the document, no internals.
  if (original instanceof GraphQLError && !original.originalError)
    return { ...formatted, extensions };
  const safe = publicError(original);
  if (!(safe instanceof DomainError))
    return {
      message: safe.message,
      locations: formatted.locations,
      path: formatted.path,
      extensions: { code: 'BAD_REQUEST' },
    };
  return {
    message: safe.message,
    locations: formatted.locations,
    path: formatted.path,
    extensions: { code: GRAPHQL_CODE[safe.code], error: safe.code },
  };
}
