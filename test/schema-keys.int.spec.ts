import pg from 'pg';
import { createTestDatabase } from './support/test-database';

/**
 * The per-run rule (docs/scaling.md, "Citus"): every table that holds a run's data carries the run id
 * in its primary key, in every unique key and in every foreign key to another per-run table, so that
 * with the run id as distribution column all of a run's rows sit on one shard and every per-run query
 * and join stays there. A table that is not per run, or a key that breaks the rule, is listed below
 * with its reason; anything else that breaks it fails this test.
 */

/** Tables that hold no run's data: in Citus they stay on the coordinator or become reference tables. */
const NOT_PER_RUN: Record<string, string> = {
  _migrations: 'which migrations are applied: one row per migration, no run',
  projects: 'a handful of rows every run refers to: a reference table (copied to every node)',
  api_keys: 'keys span runs (a project or every project): a reference table, read on every request',
};

/** Constraints on per-run tables that break the rule on purpose (table.constraint → why). */
const EXCEPTIONS: Record<string, string> = {
  'runs.runs_parent_run_id_fkey':
    'a fork names its parent, another run on another shard; in Citus this key is dropped and the fork checks its parent when it is created',
};

/** The column that holds the run id: `id` in runs itself, `run_id` everywhere else. */
const runColumn = (table: string) => (table === 'runs' ? 'id' : 'run_id');

interface Key {
  table: string;
  name: string;
  kind: 'primary' | 'unique' | 'foreign';
  columns: string[];
  /** For a foreign key: the referenced table and its columns, in the same order as `columns`. */
  references?: { table: string; columns: string[] };
}

async function tablesOf(pool: pg.Pool): Promise<{ table: string; columns: string[] }[]> {
  const res = await pool.query<{ table: string; columns: string[] }>(
    `SELECT c.table_name AS table, array_agg(c.column_name::text ORDER BY c.ordinal_position) AS columns
     FROM information_schema.columns c
     JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
     GROUP BY c.table_name ORDER BY c.table_name`,
  );
  return res.rows;
}

/** SQL: the names of the attribute numbers `numbers` of relation `relation`, in their order. */
const columnNames = (numbers: string, relation: string) =>
  `ARRAY(SELECT a.attname::text FROM unnest(${numbers}) WITH ORDINALITY k(num, ord)
         JOIN pg_attribute a ON a.attrelid = ${relation} AND a.attnum = k.num ORDER BY k.ord)`;

/** Primary keys and unique indexes (constraints or not), and foreign keys, of the public schema. */
async function keysOf(pool: pg.Pool): Promise<Key[]> {
  const unique = await pool.query<Key>(
    `SELECT t.relname AS table, i.relname AS name,
            CASE WHEN x.indisprimary THEN 'primary' ELSE 'unique' END AS kind,
            ${columnNames('x.indkey', 't.oid')} AS columns
     FROM pg_index x
     JOIN pg_class t ON t.oid = x.indrelid
     JOIN pg_class i ON i.oid = x.indexrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = 'public' AND x.indisunique`,
  );
  const foreign = await pool.query<Key & { ref_table: string; ref_columns: string[] }>(
    `SELECT t.relname AS table, c.conname AS name, 'foreign' AS kind, r.relname AS ref_table,
            ${columnNames('c.conkey', 'c.conrelid')} AS columns,
            ${columnNames('c.confkey', 'c.confrelid')} AS ref_columns
     FROM pg_constraint c
     JOIN pg_class t ON t.oid = c.conrelid
     JOIN pg_class r ON r.oid = c.confrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = 'public' AND c.contype = 'f'`,
  );
  return [
    ...unique.rows,
    ...foreign.rows.map(({ ref_table, ref_columns, ...k }) => ({
      ...k,
      references: { table: ref_table, columns: ref_columns },
    })),
  ];
}

/** What is wrong with a key of a per-run table, or null if it keeps the rule. */
function violation(key: Key): string | null {
  const own = runColumn(key.table);
  if (key.kind !== 'foreign')
    return key.columns.includes(own) ? null : `${key.kind} key (${key.columns}) lacks ${own}`;
  const target = key.references as { table: string; columns: string[] };
  if (target.table in NOT_PER_RUN) return null; // a reference table: any node can check it
  const at = key.columns.indexOf(own);
  return at >= 0 && target.columns[at] === runColumn(target.table)
    ? null
    : `foreign key (${key.columns}) → ${target.table} (${target.columns}) does not pair ${own} with ${target.table}.${runColumn(target.table)}`;
}

/** Every breach of the rule in the schema, as `table.constraint: what`, exceptions left out. */
async function breaches(pool: pg.Pool): Promise<string[]> {
  const tables = await tablesOf(pool);
  const perRun = new Set(tables.map((t) => t.table).filter((t) => !(t in NOT_PER_RUN)));
  const found: string[] = [];
  for (const t of tables) {
    if (perRun.has(t.table) && !t.columns.includes(runColumn(t.table)))
      found.push(
        `${t.table}: no ${runColumn(t.table)} column (add it to the keys, or list the table as not per run)`,
      );
    if (!perRun.has(t.table) && t.columns.includes('run_id'))
      found.push(`${t.table}: listed as not per run but has run_id`);
  }
  const keys = await keysOf(pool);
  for (const t of perRun)
    if (!keys.some((k) => k.table === t && k.kind === 'primary'))
      found.push(`${t}: no primary key`);
  for (const key of keys) {
    if (!perRun.has(key.table) || `${key.table}.${key.name}` in EXCEPTIONS) continue;
    const what = violation(key);
    if (what) found.push(`${key.table}.${key.name}: ${what}`);
  }
  return found.sort();
}

describe('every per-run key includes the run id (Citus distribution column)', () => {
  let pool: pg.Pool;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await createTestDatabase(), max: 1 });
  });
  afterAll(async () => pool?.end());

  test('the migrated schema keeps the rule, apart from the listed exceptions', async () => {
    expect(await breaches(pool)).toEqual([]);
  });

  test('every listed exception exists and still breaks the rule (no stale entries)', async () => {
    const keys = await keysOf(pool);
    for (const name of Object.keys(EXCEPTIONS)) {
      const key = keys.find((k) => `${k.table}.${k.name}` === name);
      expect({ name, found: Boolean(key) }).toEqual({ name, found: true });
      expect({ name, violation: violation(key as Key) }).not.toEqual({ name, violation: null });
    }
    const tables = (await tablesOf(pool)).map((t) => t.table);
    for (const table of Object.keys(NOT_PER_RUN)) expect(tables).toContain(table);
  });

  test('a new per-run table whose keys lack the run id is caught', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `CREATE TABLE scratch_notes (id bigint PRIMARY KEY, run_id uuid NOT NULL REFERENCES runs (id),
                                     set_id bigint, iteration int, UNIQUE (set_id, iteration))`,
      );
      await client.query('CREATE TABLE scratch_tags (id bigint PRIMARY KEY, tag text)');
      await client.query(
        `CREATE TABLE scratch_links (run_id uuid NOT NULL, iteration int NOT NULL,
           other uuid NOT NULL, PRIMARY KEY (run_id, iteration),
           FOREIGN KEY (other, iteration) REFERENCES iterations (run_id, iteration))`,
      );
      const inTransaction = { query: client.query.bind(client) } as unknown as pg.Pool;
      expect((await breaches(inTransaction)).filter((b) => b.startsWith('scratch_'))).toEqual([
        'scratch_links.scratch_links_other_iteration_fkey: foreign key (other,iteration) → iterations (run_id,iteration) does not pair run_id with iterations.run_id',
        'scratch_notes.scratch_notes_pkey: primary key (id) lacks run_id',
        'scratch_notes.scratch_notes_set_id_iteration_key: unique key (set_id,iteration) lacks run_id',
        'scratch_tags.scratch_tags_pkey: primary key (id) lacks run_id',
        'scratch_tags: no run_id column (add it to the keys, or list the table as not per run)',
      ]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
