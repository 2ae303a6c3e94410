import type pg from 'pg';

/**
 * Counts the SQL statements sent through a pool (every `query` of the pool and
 * of its checked-out clients), so tests can assert that a nested GraphQL query
 * costs a fixed number of statements whatever its page size.
 */
export class StatementCounter {
  count = 0;

  attach(pool: pg.Pool): void {
    const originalQuery = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as { query: unknown }).query = (...args: unknown[]) => {
      this.count++;
      return originalQuery(...args);
    };
    pool.on('connect', (client) => {
      const clientQuery = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        this.count++;
        return clientQuery(...args);
      };
    });
  }
}
