import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase } from './support/test-database';
import { api, gql, spawnServer, startTestServer, type ServerProcess } from './support/test-server';
import { syntheticRun } from './support/synthetic-run';

/**
 * Server processes split by role on one database (docs/scaling.md): one serves the API and takes
 * no jobs (CREDITLAB_WORKER=false), one takes jobs and serves no API (CREDITLAB_API=false).
 */
let apiServer: ServerProcess & { databaseUrl: string };
let worker: ServerProcess;
beforeAll(async () => {
  apiServer = await startTestServer({ CREDITLAB_WORKER: 'false' });
  worker = await spawnServer({
    DATABASE_URL: apiServer.databaseUrl,
    CREDITLAB_API: 'false',
    CREDITLAB_RECOMPUTE_TURN_MS: '5',
  });
});
afterAll(async () => Promise.all([apiServer?.stop(), worker?.stop()]));

/** How many iterations this process has estimated under `method` (its /metrics). */
async function estimatedIterations(url: string, method: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`creditlab_estimator_seconds_count{method="${method}"}`));
  return line ? Number(line.split(' ')[1]) : 0;
}

test('a jobs-only process answers health, readiness and metrics, and 404 naming the setting elsewhere', async () => {
  expect((await fetch(`${worker.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
  expect((await fetch(`${worker.url}/metrics`)).status).toBe(200);
  for (const [path, init] of [
    ['/graphql', { method: 'POST', body: '{"query":"{ viewer { role } }"}' }],
    ['/v1/runs', { method: 'GET' }],
  ] as const) {
    const res = await api(`${worker.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: 'NOT_FOUND',
      message: expect.stringContaining('CREDITLAB_API=false'),
    });
  }
  expect(worker.output()).toContain('recompute jobs only');
});

test('a job asked of the API process is done by the jobs-only process', async () => {
  const { id } = await syntheticRun(apiServer.url, 4);
  const asked = await gql<{ recompute: { id: string; total: number } }>(
    apiServer,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "grpo" }) { id total } }',
    { r: id },
  );
  const job = asked.data!.recompute;
  expect(job.total).toBe(3); // the last iteration of a running run is still open
  const until = Date.now() + 60_000;
  let status = '';
  while (status !== 'COMPLETED' && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    const res = await gql<{ job: { status: string } }>(
      apiServer,
      'query($id: ID!) { job(id: $id) { status } }',
      { id: job.id },
    );
    status = res.data!.job.status;
  }
  expect(status).toBe('COMPLETED');
  expect(await estimatedIterations(worker.url, 'grpo')).toBe(3);
  expect(await estimatedIterations(apiServer.url, 'grpo')).toBe(0);
});

test('a process that would neither serve the API nor take jobs does not start (exit status 2)', async () => {
  await expect(
    spawnServer({
      DATABASE_URL: apiServer.databaseUrl,
      CREDITLAB_API: 'false',
      CREDITLAB_WORKER: 'false',
    }),
  ).rejects.toThrow(/exited with 2[\s\S]*CREDITLAB_API: false with CREDITLAB_WORKER=false/);
});

test('a jobs-only process on a database without keys creates none (only an API process writes the credentials file)', async () => {
  const databaseUrl = await createTestDatabase();
  const credentials = path.join(mkdtempSync(path.join(tmpdir(), 'creditlab-jobs-only-')), 'c.json');
  const jobsOnly = await spawnServer({
    DATABASE_URL: databaseUrl,
    CREDITLAB_API: 'false',
    CREDITLAB_ADMIN_KEY: undefined,
    CREDITLAB_CREDENTIALS: credentials,
  });
  await jobsOnly.stop();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    expect((await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n).toBe(0);
  } finally {
    await pool.end();
  }
  expect(existsSync(credentials)).toBe(false);
});
