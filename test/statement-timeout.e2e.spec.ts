import { CreditlabApiError, CreditlabClient } from '@creditlab/client';
import pg from 'pg';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * CREDITLAB_STATEMENT_TIMEOUT_SECONDS: PostgreSQL stops a read that runs past it, where it runs, and the
 * caller is told why. (A read whose plan went wrong had run for minutes after its client left, and held
 * the server's shutdown meanwhile.) A statement here is made to wait by a lock held on `runs`.
 */
let server: ServerProcess & { databaseUrl: string };
let locker: pg.Client;

beforeAll(async () => {
  server = await startTestServer({ CREDITLAB_STATEMENT_TIMEOUT_SECONDS: '1' });
  locker = new pg.Client({ connectionString: server.databaseUrl });
  await locker.connect();
});
afterAll(async () => {
  await locker.end();
  await server.stop();
});

test('a read past the limit is stopped and said so; the next one is served', async () => {
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE runs IN ACCESS EXCLUSIVE MODE');
  try {
    const started = Date.now();
    const res = await gql(server, '{ runs(first: 5) { nodes { id } } }');
    expect(Date.now() - started).toBeLessThan(60_000); // not for ever: stopped by PostgreSQL
    expect(res.errors?.[0]).toMatchObject({
      message: expect.stringContaining('CREDITLAB_STATEMENT_TIMEOUT_SECONDS'),
      extensions: { code: 'STATEMENT_TIMEOUT' },
    });
    const rest = await api(`${server.url}/v1/runs/11111111-1111-4111-8111-111111111111/export`);
    expect(rest.status).toBe(503);
    expect(await rest.json()).toMatchObject({ error: 'STATEMENT_TIMEOUT' });
    // Stopped in PostgreSQL, not only given up on by the server: nothing waits on the lock any more.
    const waiting = await locker.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    expect(waiting.rows[0]!.n).toBe(0);
  } finally {
    await locker.query('ROLLBACK');
  }
  const after = await gql(server, '{ runs(first: 5) { nodes { id } } }');
  expect(after.errors).toBeUndefined();
});

test('the TypeScript client does not retry a request the server stopped at its time limit', async () => {
  let requests = 0;
  const client = new CreditlabClient({
    url: server.url,
    apiKey: ADMIN_KEY,
    retryDelayMs: 1,
    fetch: (input, init) => {
      requests++;
      return fetch(input, init);
    },
  });
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE runs IN ACCESS EXCLUSIVE MODE');
  let refused: unknown;
  try {
    refused = await client.exportRun('11111111-1111-4111-8111-111111111111').catch((e) => e);
  } finally {
    await locker.query('ROLLBACK');
  }
  expect(refused).toBeInstanceOf(CreditlabApiError);
  expect(refused).toMatchObject({ status: 503, body: { error: 'STATEMENT_TIMEOUT' } });
  // One request: a retry would hold a database connection as long again, five times over.
  expect(requests).toBe(1);
});
