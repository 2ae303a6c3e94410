import type { ApolloServerPlugin } from '@apollo/server';
import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  GraphQLString,
  isLeafType,
  isListType,
  isObjectType,
  type GraphQLFieldResolver,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { callersMistake } from './callers-mistake';

/** How many numbers (or other scalars) of a list weigh as much as one object. */
export const SCALARS_PER_OBJECT = 16;

/** How many characters of a string weigh as much as one number: 256 of them, one object. */
const CHARACTERS_PER_SCALAR = 16;

/**
 * Objects that are only a pair of numbers weigh as those numbers do: a metric series is one point
 * per iteration, and the web app asks for every series of the runs it shows.
 */
const NUMBER_PAIRS = new Set(['SeriesPoint']);

const CODE = 'QUERY_TOO_COSTLY';

/**
 * The cost limit (query-limits.ts) is checked before execution, where a list without `first`
 * (a trajectory's steps, a run's forks, iterations, jobs) can only be priced at a typical size,
 * and a JSON value (an event's data, an iteration's metrics) not at all: one long trajectory asked
 * for under many aliases, or forks of forks nested deep, would pass it and return millions of
 * objects. So what comes back is also counted as it resolves: every list field, every JSON field
 * and every String field of the schema is wrapped to add what it returned to its request's tally
 * (an object 1; a number, a JSON leaf or 16 characters of a string 1/16), and the request stops at
 * `maxItems`, before what is past it is serialized. Strings count by length because a step's
 * state or action text has no length limit of its own: counted as objects, 250,000 steps of long
 * observations would still have been gigabytes.
 * A query's tally belongs to its context object (one per HTTP request); a subscription's to each
 * message (its root value, the event), since its context lives as long as the subscription.
 * Mutations are not counted: refused after they ran, their effects would stay while the answer says
 * to ask for less, and a client doing so would act twice.
 */
export function limitReturnedItems(schema: GraphQLSchema, maxItems: number): GraphQLSchema {
  // Counted in scalars (a sixteenth of an item), so that small things add up exactly.
  const maxScalars = maxItems * SCALARS_PER_OBJECT;
  const tallies = new WeakMap<object, { scalars: number }>();
  const tallyOf = (context: unknown, info: GraphQLResolveInfo) => {
    const owner = info.operation.operation === 'subscription' ? info.rootValue : context;
    // Apollo always passes a context object, and a subscription's events are objects; without one
    // there is nothing to count for.
    if (typeof owner !== 'object' || owner === null) return { scalars: 0 };
    let tally = tallies.get(owner);
    if (!tally) tallies.set(owner, (tally = { scalars: 0 }));
    return tally;
  };
  const tooMany = () =>
    callersMistake(
      `the result has more than ${maxItems} items in its lists, JSON values and strings (${SCALARS_PER_OBJECT} numbers or ${SCALARS_PER_OBJECT * CHARACTERS_PER_SCALAR} characters count as one); ask for less: smaller pages, fewer aliases, shallower nesting`,
      { code: CODE, maxCost: maxItems, returned: true },
    );
  const add = (tally: { scalars: number }, scalars: number) => {
    tally.scalars += scalars;
    if (tally.scalars > maxScalars) throw tooMany();
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (getNullableType(field.type) === GraphQLString) {
        field.resolve = countLongStrings(
          field.resolve ?? defaultFieldResolver,
          (context, info, scalars) => add(tallyOf(context, info), scalars),
        );
        continue;
      }
      const weigh = weigher(field.type);
      if (!weigh) continue;
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
      const count = (tally: { scalars: number }, value: unknown) => {
        add(tally, weigh(value, maxScalars - tally.scalars));
        return value;
      };
      field.resolve = (source, args, context, info) => {
        if (info.operation.operation === 'mutation') return resolve(source, args, context, info);
        const tally = tallyOf(context, info);
        // Past the limit already: nothing more is loaded for this request.
        if (tally.scalars > maxScalars) throw tooMany();
        const value = resolve(source, args, context, info);
        return value instanceof Promise ? value.then((v) => count(tally, v)) : count(tally, value);
      };
    }
  }
  return schema;
}

/**
 * A String field's resolver that adds a string's weight (a scalar per 16 characters) to the tally.
 * Most strings (ids, names, keys) weigh nothing and go without a lookup of the tally: this wrapper
 * runs for every string of every answer. Nothing is loaded for a string, so unlike a list it is not
 * refused before it resolves.
 */
function countLongStrings(
  resolve: GraphQLFieldResolver<unknown, unknown>,
  add: (context: unknown, info: GraphQLResolveInfo, scalars: number) => void,
): GraphQLFieldResolver<unknown, unknown> {
  const weigh = (value: unknown, context: unknown, info: GraphQLResolveInfo) => {
    if (
      typeof value === 'string' &&
      value.length >= CHARACTERS_PER_SCALAR &&
      info.operation.operation !== 'mutation'
    )
      add(context, info, stringLength(value));
    return value;
  };
  return (source, args, context, info) => {
    const value = resolve(source, args, context, info);
    return value instanceof Promise
      ? value.then((v) => weigh(v, context, info))
      : weigh(value, context, info);
  };
}

/** How a field's value is weighed, in scalars (`upTo`: where to stop counting); none if free. */
function weigher(type: GraphQLOutputType): ((value: unknown, upTo: number) => number) | undefined {
  const named = getNamedType(type);
  if (named.name === 'JSON') return jsonScalars;
  const listType = getNullableType(type);
  if (!isListType(listType)) return undefined;
  if (named === GraphQLString) return (value) => (Array.isArray(value) ? stringsScalars(value) : 0);
  const each = isLeafType(named) ? 1 : NUMBER_PAIRS.has(named.name) ? 2 : SCALARS_PER_OBJECT;
  return (value) => (Array.isArray(value) ? each * value.length : 0);
}

/** A list of strings: each 1, plus one per 16 characters. */
function stringsScalars(values: unknown[]): number {
  let n = 0;
  for (const v of values) n += 1 + (typeof v === 'string' ? stringLength(v) : 0);
  return n;
}

/** What a string's characters weigh, in scalars (besides the 1 it weighs as a list item or JSON leaf). */
const stringLength = (s: string) => Math.floor(s.length / CHARACTERS_PER_SCALAR);

/**
 * A JSON value's leaves (a string 1, plus 1 per 16 characters), walked until more than `upTo`:
 * past that the request stops, so the rest need not be counted.
 */
function jsonScalars(value: unknown, upTo: number): number {
  let n = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && n <= upTo) {
    const v = pending.pop();
    if (typeof v === 'string') n += 1 + stringLength(v);
    else if (Array.isArray(v)) for (const x of v) pending.push(x);
    else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) pending.push(x);
    else if (v !== undefined) n += 1;
  }
  return n;
}

/**
 * A request stopped by the limit answers with that one error (400) and no data: the partial
 * result and an error per list field after the limit would only hide what to change.
 */
export function returnedItemsLimitPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const stop = response.body.singleResult.errors?.find(
            (e) => e.extensions?.code === CODE && e.extensions?.returned === true,
          );
          if (stop) response.body.singleResult = { errors: [stop] };
        },
      };
    },
  };
}
