import { GraphQLError, GraphQLScalarType } from 'graphql';
import { DateTimeResolver } from 'graphql-scalars';

/** Years PostgreSQL's timestamptz and Prisma both take as written (ISO 8601 without sign). */
const FIRST_YEAR = 1;
const LAST_YEAR = 9999;

function inRange(value: Date): Date {
  const year = value.getUTCFullYear();
  if (year < FIRST_YEAR || year > LAST_YEAR)
    throw new GraphQLError(
      `DateTime must be from year ${FIRST_YEAR} to ${LAST_YEAR}, got ${value.toISOString()}`,
    );
  return value;
}

/**
 * graphql-scalars' strict DateTime (Nest's own turns "last tuesday" into an Invalid Date), limited
 * to the years the database stores: year 0 parses, but reached a query as an internal error.
 */
export const DateTimeScalar = new GraphQLScalarType<Date, unknown>({
  ...DateTimeResolver.toConfig(),
  parseValue: (value) => inRange(DateTimeResolver.parseValue(value) as Date),
  parseLiteral: (ast, variables) => inRange(DateTimeResolver.parseLiteral(ast, variables) as Date),
});
