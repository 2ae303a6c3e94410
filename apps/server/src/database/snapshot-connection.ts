import pg from 'pg';

/**
 * A connection of its own holding one read-only REPEATABLE READ transaction: every read through
 * it sees the database as of its first statement, however long the reads take and whatever is
 * written meanwhile (as pg_dump reads). It is not taken from a pool: a long read holding a pooled
 * connection while it needs another one for a write (an export storing the advantages it computed)
 * could wait on itself once every pooled connection is held so.
 */
export class SnapshotConnection {
  private constructor(readonly client: pg.Client) {}

  static async open(url: string): Promise<SnapshotConnection> {
    const client = new pg.Client({ connectionString: url });
    // A connection lost mid-read fails that read; without a listener it would end the process.
    client.on('error', () => undefined);
    await client.connect();
    try {
      // The snapshot is taken by the first statement after BEGIN: this one, not the caller's.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1');
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    return new SnapshotConnection(client);
  }

  /** Ends the transaction and the connection (nothing was written: there is nothing to keep). */
  async close(): Promise<void> {
    await this.client.query('ROLLBACK').catch(() => undefined);
    await this.client.end().catch(() => undefined);
  }
}
