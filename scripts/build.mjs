// Compiles the apps and libraries to CommonJS in dist/ (or the folder given as the first argument) with
// swc: decorator metadata for Nest, and the @creditlab/* path aliases rewritten to relative requires, so
// `node dist/apps/server/src/main.js` runs with production dependencies only. Migrations are copied
// beside the code (libs/db finds them at dist/migrations).
import { transformFile } from '@swc/core';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const out = path.resolve(root, process.argv[2] ?? 'dist');

async function* sources(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'test' && entry.name !== 'node_modules') yield* sources(full);
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
