// The compiled output the npm scripts run (scripts/run-entry.mjs): the checkout's apps and libraries
// compiled by scripts/compile.mjs into node_modules/.cache/creditlab/entries/<fingerprint>/ (or
// $CREDITLAB_BUILD_CACHE/<fingerprint>/), made by `npm install` (postinstall) or on first use.
//
// Current or not: the fingerprint is a hash of the path, size, modification and change time of
// every file the compilation reads, plus the files that configure it. Any edit, added, removed or
// renamed file (even one restored with an older mtime: its change time moves) gives another
// fingerprint, hence another folder, which does not exist yet, so the code is compiled again.
//
// Concurrency: a build is written to a temporary folder and renamed into place in one step, so a
// command never sees half of one; when two commands build the same fingerprint at once, the first
// rename wins and the other discards its copy. Folders are never rewritten, so a running server keeps
// the code it started with; older builds are removed after a new one is made, unless a live process
// runs from them (each command leaves its pid in <build>/.pids while it runs).
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { compileTree, sourceFiles } from './compile.mjs';

const root = path.resolve(import.meta.dirname, '..');

/** Files that change what is compiled or how, besides the sources. */
const CONFIG_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/compile.mjs'];

/**
 * What the compiled code reaches by a path relative to its own folder (`__dirname/../../..`):
 * linked back to the checkout, so it reads the same migrations and web app and writes the same
 * schema.gql and docs as when run from source.
 */
const LINKED = ['migrations', 'schema.gql', 'docs', 'apps/web/dist'];

/** Raised to abandon every existing build when the layout of one changes. */
const FORMAT = 1;

export function cacheDir(env = process.env) {
  return path.resolve(
    env.CREDITLAB_BUILD_CACHE || path.join(root, 'node_modules/.cache/creditlab/entries'),
  );
}

/** The fingerprint of the checkout as it is now (a few milliseconds: one stat per file). */
export function fingerprint() {
  const hash = createHash('sha256').update(`format ${FORMAT}\n`);
  const files = [...sourceFiles(root), ...CONFIG_FILES.map((f) => path.join(root, f))];
  for (const file of files) {
    const s = statSync(file, { throwIfNoEntry: false });
    hash.update(
      `${path.relative(root, file)}\t${s ? `${s.size}\t${s.mtimeMs}\t${s.ctimeMs}` : '-'}\n`,
    );
  }
  return hash.digest('hex').slice(0, 20);
}

/** The build for this fingerprint, if it has been made. */
export function findBuild(cache, print) {
  const dir = path.join(cache, print);
  return existsSync(dir) ? dir : undefined;
}

/**
 * Compiles the checkout into `cache/print` unless another process got there first; resolves with
 * the folder. Rejects when the code does not compile (nothing is left behind).
 */
export async function build(cache, print) {
  const dir = path.join(cache, print);
  const tmp = path.join(cache, `.tmp-${process.pid}-${print}`);
  mkdirSync(cache, { recursive: true });
  rmSync(tmp, { recursive: true, force: true });
  try {
    await compileTree(root, tmp);
    for (const link of LINKED) {
      mkdirSync(path.dirname(path.join(tmp, link)), { recursive: true });
      symlinkSync(path.join(root, link), path.join(tmp, link));
    }
    mkdirSync(path.join(tmp, '.pids'));
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    // Another command renamed the same build into place first: theirs is as good.
    if (!['ENOTEMPTY', 'EEXIST'].includes(e.code) || !existsSync(dir)) throw e;
  }
  removeOldBuilds(cache, print);
  return dir;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/** A minute's grace: a command may have found a build and not yet written its pid. */
const GRACE_MS = 60_000;

/** Removes builds other than `keep` that no live process runs from, and abandoned temporaries. */
export function removeOldBuilds(cache, keep) {
  for (const name of readdirSync(cache)) {
    const dir = path.join(cache, name);
    const tmp = /^\.tmp-(\d+)-/.exec(name);
    if (tmp) {
      if (!alive(Number(tmp[1]))) rmSync(dir, { recursive: true, force: true });
      continue;
    }
    // Only builds are removed: a cache folder someone pointed elsewhere may hold other files.
    if (name === keep || !/^[0-9a-f]{20}$/.test(name)) continue;
    const pids = path.join(dir, '.pids');
    const inUse = (() => {
      try {
        if (Date.now() - statSync(pids).mtimeMs < GRACE_MS) return true;
        return readdirSync(pids).some((pid) => alive(Number(pid)));
      } catch {
        return false;
      }
    })();
    if (!inUse) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Marks `dir` as used by this process until it exits. False when the build disappeared meanwhile
 * (removed by another command after an edit), so the caller builds again.
 */
export function claim(dir) {
  const file = path.join(dir, '.pids', String(process.pid));
  try {
    writeFileSync(file, '');
  } catch {
    return false;
  }
  process.on('exit', () => {
    try {
      unlinkSync(file);
    } catch {
      // already removed with its build
    }
  });
  return true;
}

/** Finds or makes the build of the checkout as it is now; resolves with { dir, built }. */
export async function currentBuild(cache = cacheDir()) {
  const print = fingerprint();
  const found = findBuild(cache, print);
  if (found) return { dir: found, built: false };
  return { dir: await build(cache, print), built: true };
}

// As a command (postinstall): `node scripts/entry-build.mjs`. Never fails the install: without swc
// (an install with --omit=dev) or with code that does not compile, the commands run from source.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const started = Date.now();
    const { dir, built } = await currentBuild();
    if (built)
      process.stdout.write(
        `compiled the commands in ${((Date.now() - started) / 1000).toFixed(1)} s (${path.relative(root, dir)})\n`,
      );
  } catch (e) {
    process.stderr.write(
      `the commands were not compiled (${String(e?.message ?? e).split('\n')[0]}); they will run from source\n`,
    );
  }
}
