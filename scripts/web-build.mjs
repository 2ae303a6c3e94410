// Builds the web app (apps/web → apps/web/dist) with Vite when its sources changed since the last
// build: `npm start` runs it before the server (so `npm install && npm start` is all a user does),
// `npm run build` and the test suite's global setup too. Up to date: a hash of the app's sources,
// libs/charts and the lock file, kept in dist/.build-stamp, matches. The new build goes to a
// temporary folder and replaces dist in one rename, so a running server never serves half of one.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = path.resolve(import.meta.dirname, '..');
const webDir = path.join(root, 'apps/web');
const dist = path.join(webDir, 'dist');
const stampFile = path.join(dist, '.build-stamp');

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    if (entry.name === 'node_modules' || entry.name.startsWith('dist')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else yield full;
  }
}

/** What the built app depends on: its sources, the shared chart specs, the pinned packages. */
export function sourceHash() {
  const hash = createHash('sha256');
  for (const dir of [webDir, path.join(root, 'libs/charts/src')])
    for (const file of files(dir))
      hash.update(path.relative(root, file)).update(readFileSync(file));
  hash.update(readFileSync(path.join(root, 'package-lock.json')));
  return hash.digest('hex');
}

export function isUpToDate() {
  return existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === sourceHash();
}

/**
 * Builds unless up to date. `quiet`: only errors are printed. Resolves with what happened; without
 * Vite (installed with --omit=dev) it says so and leaves whatever dist there is.
 */
export async function ensureWebBuild({ quiet = false, force = false } = {}) {
  const stamp = sourceHash();
  if (!force && isUpToDate()) return { built: false, seconds: 0 };
  let vite;
  try {
    vite = await import('vite');
  } catch {
    return {
      built: false,
      seconds: 0,
      missing: 'vite is not installed (npm install without --omit=dev builds the web app)',
    };
  }
  const started = Date.now();
  const tmp = `${dist}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  await vite.build({
    configFile: path.join(webDir, 'vite.config.mts'),
    logLevel: quiet ? 'error' : 'warn',
    build: { outDir: tmp, emptyOutDir: true },
  });
  writeFileSync(path.join(tmp, '.build-stamp'), `${stamp}\n`);
  const old = `${dist}.old-${process.pid}`;
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(tmp, dist);
  rmSync(old, { recursive: true, force: true });
  return { built: true, seconds: (Date.now() - started) / 1000 };
}

// As a command: `node scripts/web-build.mjs [--force] [--quiet]`.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const result = await ensureWebBuild({
    force: args.includes('--force'),
    quiet: args.includes('--quiet'),
  });
  if (result.missing) process.stderr.write(`web app not built: ${result.missing}\n`);
  else if (result.built)
    process.stdout.write(`web app built in ${result.seconds.toFixed(1)} s (apps/web/dist)\n`);
}
