import type { ApolloDriverConfig } from '@nestjs/apollo';
import type { Request } from 'express';
import type { IncomingMessage } from 'node:http';
import { bearerToken } from '../access/api-key';
import type { ApiKeysService } from '../access/api-keys.service';
import type { Principal } from '../access/principal';
import { overLimitMessage, type RateLimits } from '../access/rate-limits';
import { clientAddress } from '../access/unknown-key-throttle';
import type { AppConfig } from '../config/app-config';
import type { Database, Reader } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { createRolloutLoaders } from '../rollouts/rollout-loaders';
import { createRunLoaders } from '../runs/run-loaders';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { GraphQLError } from 'graphql';
import { DateTimeScalar } from './date-time-scalar';
import { formatError } from './format-error';
import { complexityLimitPlugin, documentLimitsRule } from './query-limits';
import { readReplicaPlugin } from './read-replica-plugin';
import { limitReturnedItems, returnedItemsLimitPlugin } from './returned-items-limit';
import { storableTextRule, storableVariablesPlugin } from './storable-text';
import { refuseOnSocket, socketValidation, type SocketOperation } from './socket-operations';
import { subscriptionsOverSocketPlugin } from './subscriptions-over-socket';

/** What graphql-ws hands the context function for a subscription's operations. */
interface SocketContext {
  connectionParams?: Record<string, unknown>;
  extra: {
    principal?: Principal;
    /** The key the socket connected with: looked up again for every operation and message. */
    key?: string;
    /** The upgrade request (graphql-ws's ws server puts it here): where the client connects from. */
    request?: IncomingMessage;
    /** The socket itself (ws's), to close with a code graphql-ws's `false` does not give. */
    socket?: { close(code: number, reason: string): void };
  };
}

/**
 * WebSocket's "Try Again Later": a refusal that passes. graphql-ws clients retry it with their
 * backoff, where they give up on 4403 for good (the web app then fell back to polling, which was
 * refused too).
 */
const TRY_AGAIN_LATER = 1013;

/** Closes the socket as refused for now, saying for how long, and refuses its connection. */
function tryAgainLater(connection: SocketContext, why: string): false {
  // A close frame's reason holds at most 123 bytes.
  const reason = Buffer.from(why)
    .subarray(0, 123)
    .toString()
    .replace(/\uFFFD$/, '');
  connection.extra.socket?.close(TRY_AGAIN_LATER, reason);
  return false;
}

/**
 * Apollo's configuration: the code-first schema, the request limits, errors as a caller may see
 * them, per-request batch loaders, and subscriptions over graphql-ws on the same path, whose key
 * comes in `connection_init` (`{ "authorization": "Bearer <key>" }`) and is checked and rated like
 * an HTTP request's; each subscription then counts as a request, and gets HTTP's limits
 * (socket-operations.ts).
 */
export function graphqlOptions(
  config: AppConfig,
  db: Database,
  keys: ApiKeysService,
  limits: RateLimits,
): Omit<ApolloDriverConfig, 'driver'> {
  const loaders = (reader: Reader) => ({
    ...createRunLoaders(reader),
    ...createRolloutLoaders(reader),
  });

  const rules = [
    documentLimitsRule(config.limits.graphqlMaxDepth, config.limits.graphqlMaxFields),
    storableTextRule,
  ];
  // graphql-ws takes more options than Nest's type for them names (`validate`); Nest passes them all on.
  const socket = {
    path: '/graphql',
    // The key is looked up again for every operation, so that a key revoked while its socket is
    // open stops working there as on HTTP (within the key cache's lifetime in other processes).
    onSubscribe: async (ctx: unknown, _id: string, payload: SocketOperation) => {
      const connection = ctx as SocketContext;
      const principal = await stillValid(connection);
      if (principal === 'unchecked') return [uncheckedError()];
      if (!principal) return [revokedError()];
      connection.extra.principal = principal;
      return refuseOnSocket(payload, principal, limits, config.limits.graphqlMaxTokens);
    },
    // And before every message of a subscription already running. A key that could not be
    // checked (the database unreachable for a moment) was valid at its last check: the message goes.
    onNext: async (ctx: unknown) => {
      if (!(await stillValid(ctx as SocketContext))) return { errors: [revokedError()] };
      return undefined;
    },
    validate: socketValidation(rules),
    onConnect: async (ctx: unknown) => {
      const connection = ctx as SocketContext;
      const header =
        connection.connectionParams?.authorization ?? connection.connectionParams?.Authorization;
      const token = bearerToken(typeof header === 'string' ? header : undefined);
      const from = clientAddress(connection.extra.request?.socket.remoteAddress);
      // A key that is wrong closes the socket as forbidden (4403, graphql-ws's answer to `false`);
      // one refused for now (its address or its rate over the limit, 429 on HTTP) as "try again later".
      let throttled: DomainError | undefined;
      const principal = token
        ? await keys.authenticate(token, from).catch((e: unknown) => {
            if (!(e instanceof DomainError)) throw e;
            if (e.code === ErrorCode.RateLimited) throttled = e;
            return undefined;
          })
        : undefined;
      if (throttled) return tryAgainLater(connection, throttled.message);
      if (!principal) return false;
      const rate = await limits.take(principal);
      if (!rate.allowed) return tryAgainLater(connection, overLimitMessage(principal, rate));
      connection.extra.principal = principal;
      connection.extra.key = token;
      return true;
    },
  };
  /**
   * The socket's key, if it still works. A revoked key's socket stays open but serves it nothing:
   * closing it from here could overtake the refusal on its way out. 'unchecked' when the lookup
   * failed (PostgreSQL unreachable): an error thrown into graphql-ws would close the socket as its
   * own failure (4500), which its clients do not retry.
   */
  const stillValid = async (
    connection: SocketContext,
  ): Promise<Principal | undefined | 'unchecked'> => {
    let principal: Principal | undefined;
    try {
      principal = connection.extra.key ? await keys.authenticate(connection.extra.key) : undefined;
    } catch {
      return 'unchecked';
    }
    return principal;
  };
  return {
    path: '/graphql',
    autoSchemaFile: true,
    buildSchemaOptions: { scalarsMap: [{ type: Date, scalar: DateTimeScalar }] },
    sortSchema: true,
    // Lists are counted as they resolve too: the cost limit can only guess the length of a list without `first`.
    transformSchema: (schema) => limitReturnedItems(schema, config.limits.graphqlMaxCost),
    // Every request carries a key, so the schema is shown to key holders only, production included.
    introspection: true,
    includeStacktraceInErrorResponses: false,
    formatError,
    // Per request (or subscription operation): the batch loaders its nested fields share. A socket's
    // operations get a request-like object carrying the principal its connection authenticated as.
    // Reads start on the primary; readReplicaPlugin moves a query's to the replica.
    context: (arg: { req?: Request } | SocketContext) => ({
      req:
        'req' in arg && arg.req
          ? arg.req
          : { principal: (arg as SocketContext).extra.principal, path: '/graphql' },
      reader: db,
      loaders: loaders(db),
    }),
    subscriptions: { 'graphql-ws': socket },
    validationRules: rules,
    // Bounds the work of parsing itself: a document longer than this is refused unread.
    parseOptions: { maxTokens: config.limits.graphqlMaxTokens },
    plugins: [
      // No field has a cache hint, and Apollo's cache-control plugin would wrap every field's resolver
      // to look for one: a list of steps is thousands of fields.
      ApolloServerPluginCacheControlDisabled(),
      subscriptionsOverSocketPlugin(),
      storableVariablesPlugin(),
      complexityLimitPlugin(config.limits.graphqlMaxCost),
      returnedItemsLimitPlugin(),
      // A query's reads go to the read replica, if there is one (readReplicaPlugin).
      ...(db.replica ? [readReplicaPlugin((kind) => db.readerFor(kind), loaders)] : []),
    ],
  };
}

function revokedError(): GraphQLError {
  return new GraphQLError('API key not recognised: revoked since this socket connected', {
    extensions: { code: 'UNAUTHENTICATED' },
  });
}

function uncheckedError(): GraphQLError {
  return new GraphQLError(
    'the API key could not be checked just now (the database is unavailable); try again',
    {
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    },
  );
}
