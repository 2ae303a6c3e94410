import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * The run's dictionary of state and action texts: each distinct text is stored
 * once per run and steps reference it by id. Resolving a set of texts costs one
 * statement; ids already seen in this session come from memory.
 */
export class TextDictionary {
  private readonly ids = new Map<string, string>();

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
  ) {}

  get(text: string): string {
    const id = this.ids.get(text);
    if (id === undefined) throw new Error('text not resolved');
    return id;
  }

  async resolve(texts: Iterable<string>): Promise<void> {
    const missing = [...new Set(texts)].filter((t) => !this.ids.has(t));
    if (missing.length === 0) return;
    const hashes = missing.map((t) => createHash('sha256').update(t).digest());
    const byHash = new Map(hashes.map((h, i) => [h.toString('hex'), missing[i] as string]));
    // Insert what is new; the second branch sees the rows that existed before this statement.
    const res = await this.client.query<{ id: string; hash: Buffer }>(
      `WITH input AS (SELECT * FROM unnest($2::bytea[], $3::text[]) AS t(hash, text)),
            inserted AS (
              INSERT INTO texts (run_id, hash, text) SELECT $1, hash, text FROM input
              ON CONFLICT (run_id, hash) DO NOTHING RETURNING id, hash)
       SELECT id, hash FROM inserted
       UNION ALL
       SELECT t.id, t.hash FROM texts t JOIN input i ON t.hash = i.hash WHERE t.run_id = $1`,
      [this.runId, hashes, missing],
    );
    for (const row of res.rows) {
      const text = byHash.get(row.hash.toString('hex'));
      if (text !== undefined) this.ids.set(text, row.id);
    }
  }
}
