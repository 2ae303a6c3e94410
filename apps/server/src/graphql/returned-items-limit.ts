import type { ApolloServerPlugin } from '@apollo/server';
import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  isLeafType,
  isListType,
  isObjectType,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { callersMistake } from './callers-mistake';

/** How many numbers (or other scalars) of a list weigh as much as one object. */
export const SCALARS_PER_OBJECT = 16;

/**
 * Objects that are only a pair of numbers weigh as those numbers do: a metric series is one point
 * per iteration, and the web app asks for every series of the runs it shows.
 */
const NUMBER_PAIRS = new Set(['SeriesPoint']);

const CODE = 'QUERY_TOO_COSTLY';

/**
 * The cost limit (query-limits.ts) is checked before execution, where a list without `first`
 * (a trajectory's steps, a run's forks, iterations, jobs) can only be priced at a typical size:
 * one long trajectory asked for under many aliases, or forks of forks nested deep, would pass it
 * and return millions of objects. So the lists are also counted as they are resolved: every list
 * field of the schema is wrapped to add what it returned (an object 1, a scalar 1/16) to its
 * request's tally, and the request stops at `maxItems`, before the items past it are serialized.
 * A query's tally belongs to its context object (one per HTTP request); a subscription's to each
 * message (its root value, the event), since its context lives as long as the subscription.
 * Mutations are not counted: refused after they ran, their effects would stay while the answer says
 * to ask for less, and a client doing so would act twice.
 */
export function limitReturnedItems(schema: GraphQLSchema, maxItems: number): GraphQLSchema {
  const tallies = new WeakMap<object, { items: number }>();
  const tallyOf = (context: unknown, info: GraphQLResolveInfo) => {
    const owner = info.operation.operation === 'subscription' ? info.rootValue : context;
    // Apollo always passes a context object, and a subscription's events are objects; without one
    // there is nothing to count for.
    if (typeof owner !== 'object' || owner === null) return { items: 0 };
    let tally = tallies.get(owner);
    if (!tally) tallies.set(owner, (tally = { items: 0 }));
    return tally;
  };
  const tooMany = () =>
    callersMistake(
      `the result has more than ${maxItems} items in its lists (${SCALARS_PER_OBJECT} numbers count as one); ask for less: smaller pages, fewer aliases, shallower nesting`,
      { code: CODE, maxCost: maxItems, returned: true },
    );
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const listType = getNullableType(field.type);
      if (!isListType(listType)) continue;
      const item = getNamedType(listType);
      const weigh = isLeafType(item)
        ? (n: number) => Math.ceil(n / SCALARS_PER_OBJECT)
        : NUMBER_PAIRS.has(item.name)
          ? (n: number) => Math.ceil((2 * n) / SCALARS_PER_OBJECT)
          : (n: number) => n;
      const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
      const count = (tally: { items: number }, value: unknown) => {
        if (Array.isArray(value)) tally.items += weigh(value.length);
        if (tally.items > maxItems) throw tooMany();
        return value;
      };
      field.resolve = (source, args, context, info) => {
        if (info.operation.operation === 'mutation') return resolve(source, args, context, info);
        const tally = tallyOf(context, info);
        // Past the limit already: nothing more is loaded for this request.
        if (tally.items > maxItems) throw tooMany();
        const value = resolve(source, args, context, info);
        return value instanceof Promise ? value.then((v) => count(tally, v)) : count(tally, value);
      };
    }
  }
  return schema;
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
