// Compiles the apps and libraries to CommonJS in dist/ (or the folder given as the first argument) with
// swc: decorator metadata for Nest, and the @creditlab/* path aliases rewritten to relative requires, so
// `node dist/apps/server/src/main.js` runs with production dependencies only. Migrations are copied
// beside the code (libs/db finds them at dist/migrations), and the built web app (apps/web, compiled
// by Vite, not here) to dist/apps/web/dist, where the server's web module looks for it.
import { transformFile } from '@swc/core';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureWebBuild } from './web-build.mjs';

const root = path.resolve(import.meta.dirname, '..');
const out = path.resolve(root, process.argv[2] ?? 'dist');

async function* sources(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      // apps/web is a browser app that Vite builds (below).
      if (!['test', 'node_modules'].includes(entry.name) && full !== path.join(root, 'apps/web'))
        yield* sources(full);
    } else if (/\.ts$/.test(entry.name) && !/\.(spec|d)\.ts$/.test(entry.name)) yield full;
    else if (entry.name.endsWith('.shim.js')) yield full;
  }
}

await rm(out, { recursive: true, force: true });
let count = 0;
for (const top of ['apps', 'libs']) {
  for await (const file of sources(path.join(root, top))) {
    const target = path.join(out, path.relative(root, file)).replace(/\.ts$/, '.js');
    await mkdir(path.dirname(target), { recursive: true });
    if (file.endsWith('.js')) {
      await cp(file, target);
      continue;
    }
    const { code } = await transformFile(file, {
      filename: file,
      sourceMaps: false,
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
        keepClassNames: true,
        baseUrl: root,
        paths: { '@creditlab/*': ['libs/*/src'] },
      },
      module: { type: 'commonjs', ignoreDynamic: false },
    });
    await writeFile(target, code);
    count++;
  }
}
await cp(path.join(root, 'migrations'), path.join(out, 'migrations'), { recursive: true });
process.stdout.write(`compiled ${count} files to ${path.relative(root, out) || '.'}\n`);
const web = await ensureWebBuild({ quiet: true });
if (web.missing) throw new Error(`the web app cannot be built: ${web.missing}`);
await cp(path.join(root, 'apps/web/dist'), path.join(out, 'apps/web/dist'), { recursive: true });
process.stdout.write(
  `web app ${web.built ? `built in ${web.seconds.toFixed(1)} s` : 'up to date'}, copied to ${path.relative(root, out) || '.'}/apps/web/dist\n`,
);
