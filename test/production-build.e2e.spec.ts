import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { fixtureBatches } from './support/fixture-batches';
import { createTestDatabase } from './support/test-database';
import { metric, spawnServer, ADMIN_KEY, api } from './support/test-server';

/**
 * What the container runs: the compiled build started by docker/entrypoint.sh with NODE_ENV=production
 * against a separate database (Docker itself has no engine here; the image's other steps are checked by reading).
 */
const root = path.resolve(__dirname, '..');
const entrypoint = path.join(root, 'docker/entrypoint.sh');

beforeAll(() => {
  const build = spawnSync(process.execPath, ['scripts/build.mjs', 'dist-test'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(build.stderr).toBe('');
  expect(build.stdout).toMatch(/^compiled \d+ files to dist-test/);
});

test('the entrypoint refuses to start without DATABASE_URL, saying why', () => {
  const r = spawnSync('sh', [entrypoint], {
    env: { ...process.env, DATABASE_URL: '', CREDITLAB_DIST: 'dist-test' },
    encoding: 'utf8',
  });
  expect(r.status).toBe(2);
  expect(r.stderr).toContain('DATABASE_URL is not set');
});

test('the compiled server runs in production mode: migrates, ingests, computes in worker threads', async () => {
  const server = await spawnServer(
    {
      DATABASE_URL: await createTestDatabase(),
      NODE_ENV: 'production',
      CREDITLAB_DIST: path.join(root, 'dist-test'),
      // every ingest body on the preparing thread, whose entry the build must hold too
      CREDITLAB_INGEST_THREAD_MIN_BYTES: '0',
    },
    ['sh', entrypoint],
  );
  try {
    expect(await (await fetch(`${server.url}/readyz`)).json()).toMatchObject({ status: 'ready' });
    // The built web app travels with the build (the container's runtime stage copies dist/ only).
    const page = await fetch(`${server.url}/runs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div id="root">');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${server.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
    const { id } = await client.createRun({ name: 'prod', env: 'e', method: 'bipace' });
    const events = rolloutEvents(0, fixtureBatches()[10]![1], 5);
    await client.appendEvents(id, events);
    expect(events.length).toBeGreaterThan(1);
    // all but the first line (checked by the request itself)
    expect(await metric(server, 'creditlab_ingest_thread_lines_total')).toBe(events.length - 1);
    const res = await api(`${server.url}/v1/runs/${id}/iterations/0/advantages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"method": "bipace"}',
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { method: string }).method).toBe('bipace');
  } finally {
    expect(await server.stop()).toBe(0);
  }
});
