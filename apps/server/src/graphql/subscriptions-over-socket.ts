import type { ApolloServerPlugin } from '@apollo/server';
import { callersMistake } from './callers-mistake';

/**
 * Subscriptions run over graphql-ws on /graphql, never through this HTTP pipeline (which would
 * answer an internal error): a subscription sent as an HTTP request is the caller's 400.
 */
export function subscriptionsOverSocketPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'subscription') return;
          throw callersMistake(
            'subscriptions are served over WebSocket (the graphql-ws protocol on /graphql), not over HTTP',
            { code: 'BAD_REQUEST' },
          );
        },
      };
    },
  };
}
