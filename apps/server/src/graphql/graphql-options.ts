import type { ApolloDriverConfig } from '@nestjs/apollo';
import type { Request } from 'express';
import { bearerToken } from '../access/api-key';
import type { ApiKeysService } from '../access/api-keys.service';
import type { Principal } from '../access/principal';
import type { RateLimits } from '../access/rate-limits';
import type { AppConfig } from '../config/app-config';
import type { Database } from '../database/database';
import { createRolloutLoaders } from '../rollouts/rollout-loaders';
import { createRunLoaders } from '../runs/run-loaders';
import { GraphQLError, parse } from 'graphql';
import { DateTimeScalar } from './date-time-scalar';
import { formatError } from './format-error';
import { complexityLimitPlugin, documentLimitsRule } from './query-limits';
import { storableTextRule, storableVariablesPlugin } from './storable-text';
import { subscriptionsOverSocketPlugin } from './subscriptions-over-socket';

/** What graphql-ws hands the context function for a subscription's operations. */
interface SocketContext {
  connectionParams?: Record<string, unknown>;
  extra: { principal?: Principal };
}

/**
 * Apollo's configuration: the code-first schema, the request limits, errors as a caller may see
 * them, per-request batch loaders, and subscriptions over graphql-ws on the same path, whose key
 * comes in `connection_init` (`{ "authorization": "Bearer <key>" }`) and is checked and rated like
 * an HTTP request's.
 */
export function graphqlOptions(
  config: AppConfig,
  db: Database,
  keys: ApiKeysService,
  limits: RateLimits,
): Omit<ApolloDriverConfig, 'driver'> {
  const loaders = () => ({ ...createRunLoaders(db), ...createRolloutLoaders(db) });
  return {
    path: '/graphql',
    autoSchemaFile: true,
    buildSchemaOptions: { scalarsMap: [{ type: Date, scalar: DateTimeScalar }] },
    sortSchema: true,
    // Every request carries a key, so the schema is shown to key holders only, production included.
    introspection: true,
    includeStacktraceInErrorResponses: false,
    formatError,
    // Per request (or subscription operation): the batch loaders its nested fields share. A socket's
    // operations get a request-like object carrying the principal its connection authenticated as.
    context: (arg: { req?: Request } | SocketContext) =>
      'req' in arg && arg.req
        ? { req: arg.req, loaders: loaders() }
        : {
            req: { principal: (arg as SocketContext).extra.principal, path: '/graphql' },
            loaders: loaders(),
          },
    subscriptions: {
      'graphql-ws': {
        path: '/graphql',
        onSubscribe: (_ctx, _id, payload) =>
          refuseUnparsable(payload.query, config.limits.graphqlMaxTokens),
        onConnect: async (ctx) => {
          const socket = ctx as unknown as SocketContext;
          const header =
            socket.connectionParams?.authorization ?? socket.connectionParams?.Authorization;
          const token = bearerToken(typeof header === 'string' ? header : undefined);
          const principal = token ? await keys.authenticate(token) : undefined;
          if (!principal || !(await limits.take(principal)).allowed) return false;
          socket.extra.principal = principal;
          return true;
        },
      },
    },
    validationRules: [
      documentLimitsRule(config.limits.graphqlMaxDepth, config.limits.graphqlMaxFields),
      storableTextRule,
    ],
    // Bounds the work of parsing itself: a document longer than this is refused unread.
    parseOptions: { maxTokens: config.limits.graphqlMaxTokens },
    plugins: [
      subscriptionsOverSocketPlugin(),
      storableVariablesPlugin(),
      complexityLimitPlugin(config.limits.graphqlMaxCost),
    ],
  };
}

/**
 * A document that does not parse is the caller's mistake, answered on the socket as an error for
 * that operation; graphql-ws would otherwise close the whole socket as for its own failure (4500).
 * Parsed documents go on to graphql-ws's own handling (undefined). Its token limit is HTTP's.
 */
function refuseUnparsable(query: string, maxTokens: number): readonly GraphQLError[] | undefined {
  try {
    parse(query, { maxTokens }); // bounded as over HTTP
    return undefined;
  } catch (e) {
    if (e instanceof GraphQLError) return [e];
    throw e;
  }
}
