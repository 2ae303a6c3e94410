import type pg from 'pg';

/**
 * Counts the SQL statements sent through a pool, so tests can assert that a nested GraphQL query
 * costs a fixed number of statements whatever its page size.
 */
export class StatementCounter {
  count = 0;

  attach(pool: pg.Pool): void {
    // Every statement runs on a client (pool.query checks one out), so counting there counts each once.
    pool.on('connect', (client) => {
      const clientQuery = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        this.count++;
        return clientQuery(...args);
      };
    });
  }
}
