import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { spawnTracked, track } from './support/process-registry';
import {
  alive,
  portOpen,
  privateEmbeddedPostgres,
  trackPostmaster,
  waitFor,
  removePrivateDirectories,
} from './support/private-postgres';
import { ADMIN_KEY } from './support/test-server';

/**
 * `npm start` is what the README says to run, so stopping that process must stop everything it
 * started: the server and its embedded PostgreSQL. npm 11 runs the script through `sh -c`, and
 * forwards SIGTERM and SIGINT only to its direct child.
 */
afterAll(removePrivateDirectories);

const ROOT = path.resolve(__dirname, '..');

interface NpmStart {
  npm: ChildProcess;
  serverPid: number;
  httpPort: number;
  pgPort: number;
  postmaster: number;
  output(): string;
}

async function npmStart(): Promise<NpmStart> {
  const pg = await privateEmbeddedPostgres();
  const npm = spawnTracked('npm', ['start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production', // not writing schema.gql
      NO_COLOR: '1',
      PORT: '0',
      DATABASE_URL: undefined,
      CREDITLAB_ADMIN_KEY: ADMIN_KEY,
      CREDITLAB_CREDENTIALS: path.join(path.dirname(pg.dataDir), 'credentials.json'),
      ...pg.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  npm.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(output)?.[1]);
  // The server's own pid, from its log lines (npm stands between it and the test); recorded so
  // that it is stopped when this file ends, whatever the test saw.
  const pidInLog = /\[Nest\] (\d+)|"pid":(\d+)/.exec(output);
  const serverPid = Number(pidInLog?.[1] ?? pidInLog?.[2]);
  track(serverPid, 'server of npm start');
  return {
    npm,
    serverPid,
    httpPort: Number(new URL(url).port),
    pgPort: pg.port,
    postmaster: await trackPostmaster(pg.dataDir),
    output: () => output,
  };
}

async function expectEverythingStopped(started: NpmStart): Promise<void> {
  await waitFor(() => !alive(started.serverPid) && !alive(started.postmaster));
  expect(await portOpen(started.httpPort)).toBe(false);
  expect(await portOpen(started.pgPort)).toBe(false);
  await waitFor(() => started.npm.exitCode !== null || started.npm.signalCode !== null);
}

test('SIGTERM to the npm process of `npm start` stops the server and its PostgreSQL, cleanly', async () => {
  const started = await npmStart();
  expect(alive(started.serverPid)).toBe(true);
  // npm start builds the web app when needed: the page is there with nothing else run.
  const page = await fetch(`http://127.0.0.1:${started.httpPort}/`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('<div id="root">');
  // Every script and stylesheet the page names is served (npm start runs the compiled server).
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  expect(assets.length).toBeGreaterThan(0);
  for (const asset of assets) {
    const res = await fetch(`http://127.0.0.1:${started.httpPort}${asset}`);
    expect([asset, res.status]).toEqual([asset, 200]);
  }
  process.kill(started.npm.pid as number, 'SIGTERM'); // npm alone, not its process group
  await expectEverythingStopped(started);
  expect(started.output()).toMatch(/SIGTERM: shutting down/);
});

test('SIGKILL to the npm process: the server notices its parent is gone and stops everything', async () => {
  const started = await npmStart();
  process.kill(started.npm.pid as number, 'SIGKILL');
  await expectEverythingStopped(started);
  expect(started.output()).toMatch(/parent process .* exited: shutting down/);
});
