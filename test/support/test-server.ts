import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnTracked } from './process-registry';
import { createTestDatabase } from './test-database';

const ROOT = path.resolve(__dirname, '../..');

/** The admin key every test server registers (CREDITLAB_ADMIN_KEY): over every project. */
export const ADMIN_KEY = `cl_${randomBytes(4).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/** A folder for credentials files: a test server never writes to the user's ~/.creditlab. */
const CREDENTIALS_DIR = mkdtempSync(path.join(tmpdir(), 'creditlab-test-credentials-'));

/** `fetch` with `Authorization: Bearer <key>` (the admin key unless told). */
export function api(
  url: string,
  init: RequestInit = {},
  key: string = ADMIN_KEY,
): Promise<Response> {
  return fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
  });
}

export interface ServerProcess {
  url: string;
  databaseUrl?: string;
  process: ChildProcess;
  /** Everything the server printed, for failure messages. */
  output(): string;
  /** SIGTERM and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Node's arguments that run the server from source, compiled on the fly (what the tests run). */
const SOURCE_SERVER = ['-r', '@swc-node/register', 'apps/server/src/main.ts'];

/**
 * The real server as `npm start` runs it, in its own process (Nest 12 is ESM,
 * which Jest's module runtime cannot load on Node 20; a child process is also
 * simply the honest setting for end-to-end tests). Resolves once it listens.
 */
export async function spawnServer(
  env: Record<string, string | undefined>,
  command: [string, ...string[]] = [process.execPath, ...SOURCE_SERVER],
): Promise<ServerProcess> {
  const [program, ...args] = command;
  const child = spawnTracked(program, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      NO_COLOR: '1',
      PORT: '0',
      LOG_LEVEL: 'log',
      DATABASE_URL: undefined,
      CREDITLAB_ADMIN_KEY: ADMIN_KEY,
      CREDITLAB_CREDENTIALS: path.join(CREDENTIALS_DIR, `${randomBytes(6).toString('hex')}.json`),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill(-(child.pid as number), 'SIGKILL'); // never leave a half-started server (or its database) behind
      reject(new Error(`server did not start in 120 s:\n${output}`));
    }, 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    process: child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** The server on a fresh database of the test run's Postgres; `nodeArgs`: options for its Node. */
export async function startTestServer(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ServerProcess & { databaseUrl: string }> {
  const databaseUrl = await createTestDatabase();
  const server = await spawnServer({ DATABASE_URL: databaseUrl, ...env }, [
    process.execPath,
    ...nodeArgs,
    ...SOURCE_SERVER,
  ]);
  return { ...server, databaseUrl };
}

/** POSTs a GraphQL operation (with the admin key unless told) and returns the whole response body. */
export async function gql<T = Record<string, unknown>>(
  server: { url: string },
  query: string,
  variables: Record<string, unknown> = {},
  key: string = ADMIN_KEY,
): Promise<{ data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] }> {
  const res = await api(
    `${server.url}/graphql`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    },
    key,
  );
  return (await res.json()) as {
    data?: T;
    errors?: { message: string; extensions?: Record<string, unknown> }[];
  };
}

/** The value of one Prometheus sample on the server's /metrics (`name` with its labels), 0 if absent. */
export async function metric(server: { url: string }, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}
