import pg from 'pg';

const TABLES = ['runs', 'events', 'steps', 'texts', 'rollout_groups', 'trajectories'] as const;
export type RowCounts = Record<(typeof TABLES)[number], number>;

/** Rows in every table of the event store: what "nothing was written" is checked against. */
export async function rowCounts(databaseUrl: string): Promise<RowCounts> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const counts = {} as RowCounts;
    for (const t of TABLES)
      counts[t] = (
        await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`)
      ).rows[0]!.n;
    return counts;
  } finally {
    await client.end();
  }
}
