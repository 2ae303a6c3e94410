// The one compilation of the apps and libraries to CommonJS, shared by the production build
// (scripts/build.mjs → dist/) and the compiled entry points of the npm scripts (scripts/entry-build.mjs):
// swc, with decorator metadata for Nest, and the @creditlab/* path aliases rewritten to relative
// requires. The output mirrors the checkout (apps/…, libs/…), so code that finds files relative to
// its own folder (migrations, schema.gql, the web app's dist) finds them at the same relative place.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import path from 'node:path';

/** The folders compiled; apps/web is a browser app that Vite builds (scripts/web-build.mjs). */
const TOPS = ['apps', 'libs'];

/**
 * Every file the compilation reads, in a stable order: TypeScript sources (no tests, no
 * declarations) and the CommonJS shims (`*.shim.js`) copied as they are. Synchronous, and
 * without swc: the entry launcher walks it on every start to check that a build is current.
 */
export function sourceFiles(root) {
  const found = [];
  const walk = (dir) => {
    const entries = readdirSync(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['test', 'node_modules'].includes(entry.name) && full !== path.join(root, 'apps/web'))
          walk(full);
      } else if (/\.ts$/.test(entry.name) && !/\.(spec|d)\.ts$/.test(entry.name)) found.push(full);
      else if (entry.name.endsWith('.shim.js')) found.push(full);
    }
  };
  for (const top of TOPS) walk(path.join(root, top));
  return found;
}

function swcOptions(root, file) {
  return {
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
  };
}

/**
 * Compiles `files` (default: all of sourceFiles) of the checkout at `root` into `out` (which
 * should be empty). A few files at a time: swc works on its own threads, so both cores are used.
 * Resolves with the number of files compiled (shims not counted); rejects on the first file swc cannot parse.
 */
export async function compileTree(root, out, files = sourceFiles(root)) {
  const { transformFile } = await import('@swc/core');
  const one = async (file) => {
    const target = path.join(out, path.relative(root, file)).replace(/\.ts$/, '.js');
    await mkdir(path.dirname(target), { recursive: true });
    if (file.endsWith('.js')) return copyFile(file, target);
    const { code } = await transformFile(file, swcOptions(root, file));
    await writeFile(target, code);
  };
  const queue = [...files];
  const worker = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) await one(file);
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return files.filter((file) => file.endsWith('.ts')).length;
}
