import type { ApolloServerPlugin } from '@apollo/server';
import type { OperationKind, Reader } from '../database/database';

/** The part of a request's context that says where its reads go. */
export interface ReadingContext {
  reader: Reader;
  loaders: unknown;
}

/**
 * Sends a query's reads to the read replica, once Apollo knows which operation the request runs
 * (Database.readerFor): the context starts on the primary, and a query's gets the replica's
 * reader and batch loaders over it before any resolver runs. Apollo's own resolution decides, so
 * documents of several operations, persisted queries and GET all go where Apollo runs them. Over
 * the WebSocket (graphql-ws runs those operations itself) nothing changes: they read the primary.
 */
export function readReplicaPlugin(
  readerFor: (kind: OperationKind) => Reader,
  loaders: (reader: Reader) => unknown,
): ApolloServerPlugin<ReadingContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, contextValue }) {
          if (!operation) return; // Apollo has refused the request already
          const reader = readerFor(operation.operation as OperationKind);
          if (reader === contextValue.reader) return;
          contextValue.reader = reader;
          contextValue.loaders = loaders(reader);
        },
      };
    },
  };
}
