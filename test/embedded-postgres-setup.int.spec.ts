import { spawnSync } from 'node:child_process';
import { cp, lstat, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chooseDataDir, defaultDataDir } from '../libs/db/src/data-directory';
import { installBinaries, packagedBinaries } from '../libs/db/src/postgres-binaries';
import { postgresUser, runningAsRoot } from '../libs/db/src/postgres-user';
import { privateDirectory, removePrivateDirectories } from './support/private-postgres';

/**
 * Where the embedded PostgreSQL's binaries and data live. As root (rented GPU machines,
 * containers) PostgreSQL runs as user `postgres`, which must reach both: a checkout in /root (mode
 * 700) is out of its reach, and the temp dir is no place for data.
 */

afterAll(removePrivateDirectories);

const tempDir = (mode = 0o755) => privateDirectory(mode);

/** Runs `postgres --version` as the user the embedded PostgreSQL runs as. */
async function versionAsPostgresUser(postgresBinary: string): Promise<string> {
  const user = runningAsRoot() ? await postgresUser() : {};
  const run = spawnSync(postgresBinary, ['--version'], { ...user, timeout: 30_000 });
  return `${run.status} ${run.stdout?.toString().trim()} ${run.stderr?.toString().trim()}`;
}

test('binaries inside a directory only their owner may enter are copied once to one PostgreSQL can run, and reused', async () => {
  const packaged = await packagedBinaries();
  // A checkout in /root: the package's binaries under a directory of mode 700.
  const closed = await tempDir(0o700);
  const source = { ...packaged, dir: path.join(closed, 'native') };
  await cp(packaged.dir, source.dir, { recursive: true, verbatimSymlinks: true });
  const installRoot = path.join(await tempDir(), 'postgresql');

  const [first, concurrent] = await Promise.all([
    installBinaries(source, installRoot),
    installBinaries(source, installRoot),
  ]);
  expect(first.binaries.dir).toBe(concurrent.binaries.dir);
  expect(path.dirname(first.binaries.dir)).toBe(installRoot);
  expect(path.basename(first.binaries.dir)).toMatch(
    new RegExp(`^${packaged.version.replace(/\./g, '\\.')}-[0-9a-f]{16}$`),
  );
  expect(await readdir(installRoot)).toEqual([path.basename(first.binaries.dir)]); // no leftovers
  // The library links stay links (the package's postinstall made them).
  expect((await lstat(path.join(first.binaries.dir, 'lib', 'libpq.so.5'))).isSymbolicLink()).toBe(
    true,
  );
  expect(await versionAsPostgresUser(first.binaries.postgres)).toMatch(
    /^0 postgres \(PostgreSQL\) \d+/,
  );

  const inode = (await stat(first.binaries.dir)).ino;
  const again = await installBinaries(source, installRoot);
  expect(again).toEqual({ binaries: first.binaries, copied: false });
  expect((await stat(again.binaries.dir)).ino).toBe(inode);

  // Other contents under the same package version: another copy, never the stale one.
  await writeFile(path.join(source.dir, 'share', 'creditlab-changed.txt'), 'changed\n');
  const changed = await installBinaries(source, installRoot);
  expect(changed.copied).toBe(true);
  expect(changed.binaries.dir).not.toBe(first.binaries.dir);
  expect(existsSync(path.join(changed.binaries.dir, 'share', 'creditlab-changed.txt'))).toBe(true);
});

test('the default data directory is durable and, as root, outside root’s home', () => {
  expect(defaultDataDir()).toBe(
    runningAsRoot()
      ? '/var/lib/creditlab/pg'
      : path.join(process.env.HOME ?? '', '.creditlab', 'pg'),
  );
  expect(defaultDataDir().startsWith(tmpdir())).toBe(false);
});

async function fakeCluster(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(path.join(dir, 'PG_VERSION'), '18\n');
  await writeFile(path.join(dir, 'marker'), 'the old data\n');
}

test('a database in the old default location is moved to the new one when there is none yet', async () => {
  const root = await tempDir();
  const legacy = path.join(root, 'tmp', 'creditlab', 'pg');
  const current = path.join(root, 'var', 'lib', 'creditlab', 'pg');
  await fakeCluster(legacy);

  const moved = await chooseDataDir(undefined, { current, legacy });
  expect(moved.dir).toBe(current);
  expect(moved.notes).toEqual([
    expect.stringContaining(`moved the embedded database from ${legacy}`),
  ]);
  expect(existsSync(legacy)).toBe(false);
  expect(existsSync(path.join(current, 'marker'))).toBe(true);
  expect((await stat(path.dirname(current))).mode & 0o777).toBe(0o755);

  // Both present: the new one is used, and the start-up says where the old one is.
  await fakeCluster(legacy);
  const both = await chooseDataDir(undefined, { current, legacy });
  expect(both.dir).toBe(current);
  expect(both.notes).toEqual([expect.stringContaining(`CREDITLAB_PG_DIR=${legacy}`)]);
  expect(existsSync(path.join(legacy, 'marker'))).toBe(true);

  // Configured: used as it is, nothing moved.
  const configured = path.join(root, 'mine');
  expect(await chooseDataDir(configured, { current: path.join(root, 'new'), legacy })).toEqual({
    dir: configured,
    notes: [],
  });
  expect(existsSync(path.join(legacy, 'marker'))).toBe(true);
});
