import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { npmRun } from './support/cli';
import { freePort } from './support/free-port';
import {
  privateDirectory,
  privateEmbeddedPostgres,
  removePrivateDirectories,
  runServerToExit,
} from './support/private-postgres';
import { createTestDatabase } from './support/test-database';

/**
 * A start-up that cannot succeed ends with exit status 1 and one paragraph saying which step failed,
 * why and what to do — never a stack trace.
 */

afterAll(removePrivateDirectories);

const STACK_LINE = /^\s+at /m;

function expectOneParagraph(output: string): string {
  expect(output).not.toMatch(STACK_LINE);
  const messages = output.split('\n').filter((line) => /could not start/.test(line));
  expect(messages).toHaveLength(1);
  return messages[0] as string;
}

/** Listens on `port` on 127.0.0.1 and, where the machine has IPv6, on ::1. */
async function occupy(port: number): Promise<Server[]> {
  const listen = (host: string) =>
    new Promise<Server | undefined>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, host, () => resolve(server));
    });
  const servers = [await listen('127.0.0.1'), await listen('::1')];
  return servers.filter((s): s is Server => s !== undefined);
}

const release = (servers: Server[]) =>
  Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));

test('the embedded PostgreSQL’s port is taken: the message names the port and CREDITLAB_PG_PORT', async () => {
  const pg = await privateEmbeddedPostgres();
  const blockers = await occupy(pg.port);
  try {
    const { code, output } = await runServerToExit(pg.env);
    expect(code).toBe(1);
    const message = expectOneParagraph(output);
    expect(message).toContain(`port ${pg.port} is in use by another program`);
    expect(message).toContain('Set CREDITLAB_PG_PORT to a free port');
  } finally {
    await release(blockers);
  }
});

test('a data directory PostgreSQL cannot have: the message names the directory and CREDITLAB_PG_DIR', async () => {
  // Mode 500: its owner may enter but not write; nobody else may enter (as root, root may write,
  // but PostgreSQL runs as user postgres, which may not enter).
  const closed = await privateDirectory(0o500);
  const dataDir = path.join(closed, 'pg');
  const { code, output } = await runServerToExit({
    CREDITLAB_PG_DIR: dataDir,
    CREDITLAB_PG_PORT: String(await freePort()),
  });
  expect(code).toBe(1);
  const message = expectOneParagraph(output);
  expect(message).toContain(`preparing the data directory ${dataDir} failed`);
  expect(message).toContain(closed);
  expect(message).toContain('CREDITLAB_PG_DIR');
});

test('db:migrate says the same in plain lines of its own, on the embedded database', async () => {
  const closed = await privateDirectory(0o500);
  const dataDir = path.join(closed, 'pg');
  const port = await freePort();
  const { code, stdout, stderr } = await npmRun('db:migrate', [], {
    DATABASE_URL: undefined,
    CREDITLAB_PG_DIR: dataDir,
    CREDITLAB_PG_PORT: String(port),
  });
  expect(code).toBe(1);
  // Nest's default logger wrote the first line coloured, with its pid and a timestamp.
  expect(stdout).toBe(
    `db:migrate: starting the embedded PostgreSQL: data directory ${dataDir}, port ${port}\n`,
  );
  expect(stderr).toMatch(
    /^db:migrate: The embedded PostgreSQL could not start: preparing the data directory /,
  );
  expect(stderr.split('\n').filter(Boolean)).toHaveLength(1);
});

test('the HTTP port is taken: the message names the address and PORT', async () => {
  const port = await freePort();
  const blockers = await occupy(port);
  try {
    const { code, output } = await runServerToExit({
      DATABASE_URL: await createTestDatabase(),
      PORT: String(port),
    });
    expect(code).toBe(1);
    const message = expectOneParagraph(output);
    expect(message).toContain(`127.0.0.1:${port} is in use`);
    expect(message).toContain('Set PORT');
  } finally {
    await release(blockers);
  }
});

test('DATABASE_URL names a server that does not answer: the message says so and names DATABASE_URL', async () => {
  const { code, output } = await runServerToExit({
    DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${await freePort()}/nothing`,
  });
  expect(code).toBe(1);
  const message = expectOneParagraph(output);
  expect(message).toContain('the database cannot be reached');
  expect(message).toContain('Check DATABASE_URL');
  expect(output).not.toContain('secret');
});
