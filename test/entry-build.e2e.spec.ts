import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startCommand, type CliResult } from './support/cli';
import { CONFORMANCE_DIR } from './support/conformance-dir';

/**
 * The npm scripts run their entry points through scripts/run-entry.mjs: from a compiled build when
 * it matches the checkout, compiled again when a source changed. Nothing here edits the repository:
 * stale detection is shown on a small checkout in a temporary folder (the real scripts, a tiny app
 * and library), and every build goes to a temporary cache (CREDITLAB_BUILD_CACHE).
 */
const ROOT = path.resolve(__dirname, '..');
const ENTRY = 'apps/hello/src/main.ts';
const LIBRARY = 'libs/greeting/src/index.ts';

function run(
  cwd: string,
  cache: string,
  entry: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  return startCommand(
    process.execPath,
    ['scripts/run-entry.mjs', entry, ...args],
    { CREDITLAB_BUILD_CACHE: cache, CREDITLAB_ENTRY_TRACE: '1', ...env },
    cwd,
  ).result;
}

/** Which way the launcher ran: 'built', 'compiled' (an existing build) or 'from source'. */
const way = (r: CliResult) => /^run-entry: (built|compiled|from source)/m.exec(r.stderr)?.[1];
const buildDir = (r: CliResult) => /^run-entry: (?:built|compiled) (\S+)/m.exec(r.stderr)?.[1];

/** Temporary folders of this file, removed at the end. */
const scratch: string[] = [];
const scratchDir = (prefix: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
};
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A checkout with the real launcher and a two-file program: an app importing a library. */
function tinyCheckout(): { dir: string; cache: string } {
  const dir = scratchDir('creditlab-entry-checkout-');
  mkdirSync(path.join(dir, 'scripts'));
  for (const file of ['compile.mjs', 'entry-build.mjs', 'run-entry.mjs'])
    copyFileSync(path.join(ROOT, 'scripts', file), path.join(dir, 'scripts', file));
  for (const file of ['package.json', 'tsconfig.json'])
    copyFileSync(path.join(ROOT, file), path.join(dir, file));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  mkdirSync(path.join(dir, path.dirname(ENTRY)), { recursive: true });
  mkdirSync(path.join(dir, path.dirname(LIBRARY)), { recursive: true });
  writeFileSync(
    path.join(dir, ENTRY),
    "import { greeting } from '@creditlab/greeting';\n\n" +
      "process.stdout.write(`${greeting} ${process.argv.slice(2).join(' ')}\\n`);\n",
  );
  writeFileSync(path.join(dir, LIBRARY), "export const greeting: string = 'v1';\n");
  utimesSync(path.join(dir, LIBRARY), LONG_AGO, LONG_AGO);
  return { dir, cache: path.join(dir, 'cache') };
}

/** A modification time that survives a round trip through utimes exactly. */
const LONG_AGO = new Date('2020-01-01T00:00:00Z');

/** Rewrites a file and puts its modification time back: an edit a "newer than" check misses. */
function editKeepingMtime(file: string, text: string): void {
  expect(statSync(file).mtimeMs).toBe(LONG_AGO.getTime());
  writeFileSync(file, text);
  utimesSync(file, LONG_AGO, LONG_AGO);
}

test('an edited library is compiled again before the entry runs, even with its old mtime', async () => {
  const { dir, cache } = tinyCheckout();
  const first = await run(dir, cache, ENTRY, ['a', 'b']);
  expect(first).toMatchObject({ code: 0, stdout: 'v1 a b\n' });
  expect(way(first)).toBe('built');
  const again = await run(dir, cache, ENTRY, ['c']);
  expect(again).toMatchObject({ code: 0, stdout: 'v1 c\n' });
  expect(way(again)).toBe('compiled');
  expect(buildDir(again)).toBe(buildDir(first));

  // Same size, same mtime: only the change time says the file is new.
  editKeepingMtime(path.join(dir, LIBRARY), "export const greeting: string = 'v2';\n");
  const edited = await run(dir, cache, ENTRY, ['d']);
  expect(edited).toMatchObject({ code: 0, stdout: 'v2 d\n' });
  expect(way(edited)).toBe('built');
  expect(buildDir(edited)).not.toBe(buildDir(first));

  // A new file counts too (a library the entry does not import yet).
  writeFileSync(path.join(dir, 'libs/greeting/src/extra.ts'), 'export const extra = 1;\n');
  expect(way(await run(dir, cache, ENTRY, []))).toBe('built');
});

test('commands starting together on a stale checkout all run the new code; no half-written build stays', async () => {
  const { dir, cache } = tinyCheckout();
  expect(way(await run(dir, cache, ENTRY, []))).toBe('built');
  writeFileSync(path.join(dir, LIBRARY), "export const greeting: string = 'v3, concurrently';\n");
  const results = await Promise.all([1, 2, 3, 4].map((n) => run(dir, cache, ENTRY, [String(n)])));
  results.forEach((r, k) =>
    expect(r).toMatchObject({ code: 0, stdout: `v3, concurrently ${k + 1}\n` }),
  );
  expect(results.some((r) => way(r) === 'built')).toBe(true);
  expect(new Set(results.map(buildDir)).size).toBe(1);
  expect(readdirSync(cache).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
});

test('code that does not compile, or CREDITLAB_COMPILED=0, runs from source', async () => {
  const { dir, cache } = tinyCheckout();
  // A broken file the entry does not import: the build fails, the entry still runs, from source.
  mkdirSync(path.join(dir, 'libs/broken/src'), { recursive: true });
  writeFileSync(path.join(dir, 'libs/broken/src/index.ts'), 'export const = ;\n');
  const broken = await run(dir, cache, ENTRY, ['x']);
  expect(broken).toMatchObject({ code: 0, stdout: 'v1 x\n' });
  expect(broken.stderr).toMatch(/^run-entry: from source \(the build failed: /m);
  expect(readdirSync(cache).filter((name) => name.startsWith('.tmp-'))).toEqual([]);

  const asked = await run(dir, cache, ENTRY, ['y'], { CREDITLAB_COMPILED: '0' });
  expect(asked).toMatchObject({ code: 0, stdout: 'v1 y\n' });
  expect(asked.stderr).toBe('run-entry: from source (CREDITLAB_COMPILED=0)\n');
});

test('the launcher refuses anything but an entry point of the checkout, in one line', async () => {
  const { dir, cache } = tinyCheckout();
  const r = await run(dir, cache, 'scripts/run-entry.mjs', []);
  expect(r).toMatchObject({
    code: 2,
    stdout: '',
    stderr:
      'run-entry: expected an entry point under apps/ or libs/ (a .ts file), got "scripts/run-entry.mjs"\n',
  });
});

describe('estimate: the compiled entry prints what the source prints', () => {
  const cache = scratchDir('creditlab-entry-cache-');
  const batchFile = path.join(scratchDir('creditlab-entry-batch-'), 'b.json');
  beforeAll(() => {
    const fixture = JSON.parse(
      readFileSync(path.join(CONFORMANCE_DIR, 'spec/spec-s1-c3.json'), 'utf8'),
    ) as { batch: unknown };
    writeFileSync(batchFile, JSON.stringify(fixture.batch));
  });
  const estimate = 'libs/estimators/src/cli/estimate-main.ts';

  test.each([
    ['gigpo', ['--param', 'gamma=0.95', '--input', batchFile]],
    ['gated-bepo', ['--input', batchFile, '--pretty']],
    ['bipace', ['--input', path.join(ROOT, 'examples/get-the-key.json')]],
    ['grpo', ['--param', 'normalize=bogus', '--input', batchFile]],
  ])('%s', async (method, args) => {
    const compiled = await run(ROOT, cache, estimate, ['--method', method, ...args]);
    const source = await run(ROOT, cache, estimate, ['--method', method, ...args], {
      CREDITLAB_COMPILED: '0',
    });
    expect(['built', 'compiled']).toContain(way(compiled));
    expect(way(source)).toBe('from source');
    expect(compiled.code).toBe(source.code);
    expect(compiled.stdout).toBe(source.stdout);
    const withoutTrace = (r: CliResult) => r.stderr.replace(/^run-entry: .*\n/m, '');
    expect(withoutTrace(compiled)).toBe(withoutTrace(source));
    if (method === 'grpo') expect(compiled.code).toBe(2);
    else expect(JSON.parse(compiled.stdout)).toMatchObject({ method });
  });
});
