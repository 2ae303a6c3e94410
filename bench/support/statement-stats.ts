import type pg from 'pg';

/**
 * Where the database's time goes, statement by statement (pg_stat_statements): which the embedded
 * PostgreSQL of the benchmarks preloads. `track = all` also counts the statements PostgreSQL runs
 * for itself, such as foreign-key checks. A separate PostgreSQL may not have it: then `available`
 * is false and the benchmark says so instead of a table.
 */
export const STATEMENT_STATS_SETTINGS = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
};

/** How much of each statement's text is kept. */
export const STATEMENT_CHARS = 90;

export interface StatementCost {
  /** The statement's first words, whitespace folded: enough to tell which it is. */
  statement: string;
  calls: number;
  /** Time spent executing it (wall time inside PostgreSQL, waiting for the client included). */
  ms: number;
  walBytes: number;
  rows: number;
}

export class StatementStats {
  private constructor(
    private readonly pool: pg.Pool,
    readonly available: boolean,
  ) {}

  static async open(pool: pg.Pool): Promise<StatementStats> {
    try {
      await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await pool.query('SELECT pg_stat_statements_reset()');
      return new StatementStats(pool, true);
    } catch {
      return new StatementStats(pool, false); // not preloaded on this PostgreSQL
    }
  }

  async reset(): Promise<void> {
    if (this.available) await this.pool.query('SELECT pg_stat_statements_reset()');
  }

  /** The statements of this database since the last reset, the costliest first. */
  async top(limit: number): Promise<StatementCost[]> {
    if (!this.available) return [];
    const { rows } = await this.pool.query<{
      statement: string;
      calls: string;
      ms: number;
      wal: string;
      rows: string;
    }>(
      // Grouped by their first words: a statement built with a varying number of values (or a COPY
      // naming its iterations) is one entry per variant in pg_stat_statements.
      `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), ${STATEMENT_CHARS}) AS statement, sum(calls)::text AS calls,
              sum(total_exec_time) AS ms, sum(wal_bytes)::text AS wal, sum(rows)::text AS rows
       FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND query NOT LIKE '%pg_stat_statements%'
       GROUP BY 1 ORDER BY 3 DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      statement: r.statement,
      calls: Number(r.calls),
      ms: r.ms,
      walBytes: Number(r.wal),
      rows: Number(r.rows),
    }));
  }
}
