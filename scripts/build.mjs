// Compiles the apps and libraries to CommonJS in dist/ (or the folder given as the first argument)
// with swc (scripts/compile.mjs), so `node dist/apps/server/src/main.js` runs with production
// dependencies only. Migrations are copied beside the code (libs/db finds them at dist/migrations),
// and the built web app (apps/web, compiled by Vite, not here) to dist/apps/web/dist, where the
// server's web module looks for it.
import { cp, rm } from 'node:fs/promises';
import path from 'node:path';
import { compileTree } from './compile.mjs';
import { ensureWebBuild } from './web-build.mjs';

const root = path.resolve(import.meta.dirname, '..');
const out = path.resolve(root, process.argv[2] ?? 'dist');

await rm(out, { recursive: true, force: true });
const count = await compileTree(root, out);
await cp(path.join(root, 'migrations'), path.join(out, 'migrations'), { recursive: true });
process.stdout.write(`compiled ${count} files to ${path.relative(root, out) || '.'}\n`);
const web = await ensureWebBuild({ quiet: true });
if (web.missing) throw new Error(`the web app cannot be built: ${web.missing}`);
await cp(path.join(root, 'apps/web/dist'), path.join(out, 'apps/web/dist'), { recursive: true });
process.stdout.write(
  `web app ${web.built ? `built in ${web.seconds.toFixed(1)} s` : 'up to date'}, copied to ${path.relative(root, out) || '.'}/apps/web/dist\n`,
);
