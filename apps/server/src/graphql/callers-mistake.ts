import { GraphQLError } from 'graphql';

/**
 * An error a plugin throws before execution for the caller's mistake. Apollo answers 500 for any
 * error thrown there unless the error names its status (the `http` extension, which Apollo takes
 * off the response): this one says 400, so that clients retrying server errors do not retry it.
 */
export function callersMistake(
  message: string,
  extensions: { code: string } & Record<string, unknown>,
): GraphQLError {
  return new GraphQLError(message, { extensions: { ...extensions, http: { status: 400 } } });
}
