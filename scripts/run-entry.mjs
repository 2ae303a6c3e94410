// Runs a command's TypeScript entry point, as the npm scripts do:
//
//   node scripts/run-entry.mjs libs/estimators/src/cli/estimate-main.ts --method grpo ...
//
// from the compiled build of the checkout (scripts/entry-build.mjs) when it is current, compiling it
// first when a source changed (swc: about a second), so an edited checkout never runs old code.
// Compiling rather than running from source when stale: a build costs about what one start from
// source costs, and every later start is fast again. From source (through @swc-node/register, the
// same compiler and options) only when asked, with CREDITLAB_COMPILED=0, or when the build fails
// (code that does not compile: the source path then shows the compiler's error).
//
// The entry runs in this process (no second Node start; signals reach it as if run directly), with
// process.argv as if it had been started itself. CREDITLAB_ENTRY_TRACE=1 says on stderr which way it ran.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cacheDir, claim, currentBuild } from './entry-build.mjs';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(path.join(root, 'package.json'));
const [entry, ...args] = process.argv.slice(2);
const trace = (line) => {
  if (process.env.CREDITLAB_ENTRY_TRACE === '1') process.stderr.write(`run-entry: ${line}\n`);
};

if (!entry || !/^(apps|libs)\/.+\.ts$/.test(entry) || !existsSync(path.join(root, entry))) {
  process.stderr.write(
    `run-entry: expected an entry point under apps/ or libs/ (a .ts file), got ${JSON.stringify(entry ?? '')}\n`,
  );
  process.exit(2);
}

/** The compiled entry, building it when the checkout changed; undefined to run from source. */
async function compiledEntry() {
  if (process.env.CREDITLAB_COMPILED === '0') return trace('from source (CREDITLAB_COMPILED=0)');
  try {
    const started = performance.now();
    let found = await currentBuild(cacheDir());
    // Removed by a command that built after an edit, between finding and claiming: once more.
    if (!claim(found.dir)) {
      found = await currentBuild(cacheDir());
      claim(found.dir);
    }
    const file = path.join(found.dir, entry.replace(/\.ts$/, '.js'));
    if (!existsSync(file)) return trace(`from source (${entry} is not part of the build)`);
    const ms = (performance.now() - started).toFixed(0);
    trace(`${found.built ? 'built' : 'compiled'} ${found.dir} (${ms} ms)`);
    return file;
  } catch (e) {
    trace(`from source (the build failed: ${String(e?.message ?? e).split('\n')[0]})`);
    return undefined;
  }
}

let file = await compiledEntry();
if (!file) {
  require('@swc-node/register');
  file = path.join(root, entry);
}
process.argv = [process.argv[0], file, ...args];
require(file);
