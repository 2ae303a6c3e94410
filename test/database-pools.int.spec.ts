import { openPool } from '../apps/server/src/database/pools';
import { createTestDatabase } from './support/test-database';

/**
 * The server's connection pools, against PostgreSQL itself. CREDITLAB_STATEMENT_TIMEOUT_SECONDS is
 * set on each connection once it is open, not sent among the connection's start-up parameters:
 * PgBouncer refuses a connection that sends it there (`unsupported startup parameter`), so a server
 * behind one could not start (`npm run test:pgbouncer` runs the storage specs through one).
 */
const SETTING = `SELECT setting, source FROM pg_settings WHERE name = 'statement_timeout'`;
const quiet = { warn: () => undefined, debug: () => undefined };

test('the limit is a session setting on every connection of the pool', async () => {
  const pool = openPool(await createTestDatabase(), 2, 1500, quiet);
  try {
    // Both connections, the second opened while the first is held.
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      for (const client of [first, second])
        expect((await client.query(SETTING)).rows[0]).toEqual({
          setting: '1500',
          source: 'session',
        });
    } finally {
      first.release();
      second.release();
    }
    // And it holds: PostgreSQL stops a statement that runs past it.
    await expect(pool.query('SELECT pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
  } finally {
    await pool.end();
  }
});

/** The setting a connection of a new pool with limit `ms` has. */
async function settingWith(ms: number): Promise<unknown> {
  const pool = openPool(await createTestDatabase(), 1, ms, quiet);
  try {
    return (await pool.query(SETTING)).rows[0];
  } finally {
    await pool.end();
  }
}

test('with no limit, a connection is left at the server default', async () => {
  expect(await settingWith(0)).toEqual({ setting: '0', source: 'default' });
});

test('a limit in parts of a millisecond is rounded up (one under a millisecond is not none)', async () => {
  expect(await settingWith(1500.2)).toEqual({ setting: '1501', source: 'session' });
});
