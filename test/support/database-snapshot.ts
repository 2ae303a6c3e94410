import pg from 'pg';

/**
 * Tables' rows as JSON lines and back, across PostgreSQL versions (row_to_json out,
 * json_populate_record in), and a checksum of a table's rows in a stable order. The upgrade test
 * loads a database made by an earlier schema from such a file; the rebuild test compares tables
 * by checksum.
 */
export interface SnapshotLine {
  table: string;
  row: Record<string, unknown>;
}

async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** Every row of `tables`, in order, as JSON lines. */
export function dumpTables(url: string, tables: string[]): Promise<string> {
  return withClient(url, async (c) => {
    const lines: string[] = [];
    for (const table of tables) {
      const res = await c.query<{ row: Record<string, unknown> }>(
        `SELECT row_to_json(t) AS row FROM ${pg.escapeIdentifier(table)} t ORDER BY t::text`,
      );
      for (const { row } of res.rows) lines.push(JSON.stringify({ table, row }));
    }
    return lines.join('\n') + '\n';
  });
}

/** Inserts the rows of a dump (identity columns keep their values, and their sequences follow). */
export function loadTables(url: string, dump: string): Promise<void> {
  return withClient(url, async (c) => {
    await c.query('BEGIN');
    // Rows come in table order, not in the order foreign keys need (a key made by another key).
    await c.query('SET LOCAL session_replication_role = replica');
    const tables = new Set<string>();
    for (const text of dump.split('\n')) {
      if (!text) continue;
      const { table, row } = JSON.parse(text) as SnapshotLine;
      tables.add(table);
      const t = pg.escapeIdentifier(table);
      await c.query(
        // Rows the migrations made themselves (the default project) are there already.
        `INSERT INTO ${t} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_record(NULL::${t}, $1)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(row)],
      );
    }
    for (const table of tables) {
      const identity = await c.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = $1 AND is_identity = 'YES'`,
        [table],
      );
      for (const { column_name } of identity.rows) {
        const col = pg.escapeIdentifier(column_name);
        await c.query(
          `SELECT setval(pg_get_serial_sequence($1, $2), (SELECT COALESCE(max(${col}), 0) + 1 FROM ${pg.escapeIdentifier(table)}), false)`,
          [table, column_name],
        );
      }
    }
    await c.query('COMMIT');
  });
}

/** md5 of a table's rows (every column), in a stable order: equal checksums, equal tables. */
export function tableChecksums(url: string, tables: string[]): Promise<Record<string, string>> {
  return withClient(url, async (c) => {
    const out: Record<string, string> = {};
    for (const table of tables) {
      const res = await c.query<{ sum: string | null; n: number }>(
        `SELECT md5(string_agg(t::text, E'\\n' ORDER BY t::text)) AS sum, count(*)::int AS n
         FROM ${pg.escapeIdentifier(table)} t`,
      );
      out[table] = `${res.rows[0]!.n} rows ${res.rows[0]!.sum ?? '-'}`;
    }
    return out;
  });
}
