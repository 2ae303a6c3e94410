/**
 * `npm run bench:startup`: how long each npm script's command takes to start, the old way (TypeScript
 * compiled on every call: tsx, or node -r @swc-node/register) against the new (scripts/run-entry.mjs
 * running the compiled build), in the same run, interleaved so that the machine's noise falls on
 * both alike. Also the compiled entry run with node directly (the launcher's own cost is the
 * difference), a start with no build yet (compiled first), and `node -e 0`, the floor.
 * Writes its section of docs/benchmarks.md.
 */
import { ensureDatabase, startEmbeddedPostgres } from '@creditlab/db';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../test/support/free-port';
import { ADMIN_KEY } from '../test/support/test-server';
import { fmt, machineLine, median, writeSection } from './support/bench-report';
import { timeCommand, type TimedCommand, type Timing } from './support/timed-command';

const ROOT = path.resolve(__dirname, '..');
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 10);
const NODE = process.execPath;
const TSX = [NODE, 'node_modules/tsx/dist/cli.mjs'] as const;
const SWC_NODE = [NODE, '-r', '@swc-node/register'] as const;
const ESTIMATE_ARGS = [
  '--method',
  'gigpo',
  '--param',
  'gamma=0.9',
  '--input',
  'examples/get-the-key.json',
];

interface Case {
  script: string;
  /** How the npm script ran the entry before: tsx or @swc-node/register. */
  before: readonly string[];
  entry: string;
  args: string[];
  env?: Record<string, string | undefined>;
  until?: RegExp;
}

type Variant = 'before' | 'launcher' | 'compiled';
const VARIANTS: Variant[] = ['before', 'launcher', 'compiled'];

function commandOf(c: Case, variant: Variant, build: string): TimedCommand {
  const file =
    variant === 'before'
      ? [...c.before, c.entry]
      : variant === 'launcher'
        ? [NODE, 'scripts/run-entry.mjs', c.entry]
        : [NODE, path.join(build, c.entry.replace(/\.ts$/, '.js'))];
  return { argv: [...file, ...c.args] as [string, ...string[]], env: c.env, until: c.until };
}

/** The current build's folder (made now if needed), as the launcher reports it. */
function currentBuild(): string {
  const r = spawnSync(NODE, ['scripts/run-entry.mjs', 'apps/admin/src/admin-main.ts', '--help'], {
    cwd: ROOT,
    env: { ...process.env, CREDITLAB_ENTRY_TRACE: '1' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  const dir = /^run-entry: (?:built|compiled) (\S+)/m.exec(r.stderr)?.[1];
  if (!dir) throw new Error(`no compiled build: ${r.stderr}`);
  return dir;
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'creditlab-bench-startup-'));
  chmodSync(scratch, 0o755); // PostgreSQL runs as its own user and must reach pg/ inside
  const pg = await startEmbeddedPostgres({
    dataDir: path.join(scratch, 'pg'),
    port: await freePort(),
  });
  try {
    const databaseUrl = await ensureDatabase(pg.url, 'startup');
    const serverEnv = {
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      PORT: '0',
      LOG_LEVEL: 'warn',
      CREDITLAB_ADMIN_KEY: ADMIN_KEY,
      CREDITLAB_CREDENTIALS: path.join(scratch, 'credentials.json'),
    };
    const cases: Case[] = [
      {
        script: 'estimate',
        before: TSX,
        entry: 'libs/estimators/src/cli/estimate-main.ts',
        args: ESTIMATE_ARGS,
      },
      { script: 'admin', before: TSX, entry: 'apps/admin/src/admin-main.ts', args: ['--help'] },
      { script: 'train', before: TSX, entry: 'apps/trainer/src/train-main.ts', args: ['--help'] },
      {
        script: 'experiment',
        before: TSX,
        entry: 'apps/trainer/src/experiment-main.ts',
        args: ['--help'],
      },
      {
        script: 'db:migrate',
        before: SWC_NODE,
        entry: 'apps/server/src/migrate-main.ts',
        args: [],
        env: { DATABASE_URL: databaseUrl },
      },
      {
        script: 'db:rebuild',
        before: SWC_NODE,
        entry: 'apps/server/src/rebuild-main.ts',
        args: [],
        env: { DATABASE_URL: databaseUrl },
      },
      {
        script: 'start',
        before: SWC_NODE,
        entry: 'apps/server/src/main.ts',
        args: [],
        env: serverEnv,
        until: /listening on/,
      },
    ];
    const build = currentBuild();
    // Migrated once before timing: every db:migrate below finds the database up to date.
    await timeCommand(commandOf(cases[4] as Case, 'launcher', build), ROOT);
    const times = new Map<string, number[]>();
    const add = (key: string, ms: number) => times.set(key, [...(times.get(key) ?? []), ms]);
    const record = (key: string, t: Timing) => {
      add(key, t.ms);
      if (t.cpuMs !== undefined) add(`${key}:cpu`, t.cpuMs);
    };
    const loadBefore = loadavg()[0] as number;
    const estimateOutputs = new Set<string>();
    for (let run = 0; run < RUNS; run++) {
      record('floor', await timeCommand({ argv: [NODE, '-e', '0'] }, ROOT));
      for (const c of cases)
        for (const variant of VARIANTS) {
          const t = await timeCommand(commandOf(c, variant, build), ROOT);
          record(`${c.script}/${variant}`, t);
          if (c.script === 'estimate') estimateOutputs.add(t.stdout);
        }
      // With no build yet (an empty cache): compiled first, then run.
      const cache = mkdtempSync(path.join(scratch, 'cache-'));
      const cold = commandOf(cases[0] as Case, 'launcher', build);
      record(
        'estimate/stale',
        await timeCommand({ ...cold, env: { CREDITLAB_BUILD_CACHE: cache } }, ROOT),
      );
      rmSync(cache, { recursive: true, force: true });
      const npm = await timeCommand(
        { argv: ['npm', 'run', '-s', 'estimate', '--', ...ESTIMATE_ARGS] },
        ROOT,
      );
      record('estimate/npm', npm);
      estimateOutputs.add(npm.stdout);
      process.stderr.write(`run ${run + 1}/${RUNS}\n`);
    }
    if (estimateOutputs.size !== 1) throw new Error('estimate printed different outputs');
    report(cases, times, [loadBefore, loadavg()[0] as number]);
  } finally {
    await pg.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function report(cases: Case[], times: Map<string, number[]>, load: [number, number]): void {
  const m = (key: string) => {
    const xs = times.get(key);
    return xs ? median(xs) : undefined;
  };
  const ms = (x: number | undefined) => (x === undefined ? '—' : fmt(x, 0));
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? '—' : `${fmt(a / b, 1)}×`;
  const rows = cases.map((c) => {
    const [before, launcher, compiled] = VARIANTS.map((v) => m(`${c.script}/${v}`));
    const [cpuBefore, cpuLauncher, cpuCompiled] = VARIANTS.map((v) => m(`${c.script}/${v}:cpu`));
    const what =
      c.script === 'estimate' ? 'estimate (worked example)' : [c.script, ...c.args].join(' ');
    const wall = [before, launcher, compiled].map(ms).join(' | ');
    const cpu = [cpuBefore, cpuLauncher, cpuCompiled].map(ms).join(' | ');
    return `| \`${what}\`${c.until ? ', until it listens' : ''} | ${wall} | ${ratio(before, launcher)} | ${cpu} | ${ratio(cpuBefore, cpuLauncher)} |`;
  });
  const body = `
## Start-up of the commands (\`npm run bench:startup\`)

Machine: ${machineLine()}. Run on ${new Date().toISOString().slice(0, 10)}; load average ${fmt(load[0], 1)} at the
start, ${fmt(load[1], 1)} at the end (other work shared the 2 cores: absolute wall times are inflated, compare
within a row). Command: \`npm run bench:startup\` (\`BENCH_STARTUP_RUNS\`, default 10).

Medians of ${RUNS} starts of each, in ms, npm's own time not included: *wall* from spawn to exit (\`start\`: to its
"listening" line, on a migrated embedded PostgreSQL), and *CPU*, user + system time of the process (GNU time,
10 ms resolution), which the machine's load barely moves. The variants of a command run back to back in each round,
so that noise falls on each alike.

- *before*: the entry point compiled on every call, as the npm scripts did (tsx for \`estimate\`, \`admin\`,
  \`train\`, \`experiment\`; \`node -r @swc-node/register\` for the server's commands);
- *launcher*: \`node scripts/run-entry.mjs ENTRY\`, what the npm scripts run now: the stale check (one \`stat\` per
  source file) and the compiled build;
- *compiled*: \`node\` on the compiled entry in the build folder directly (the launcher's cost is the difference).

| command | wall before | wall launcher | wall compiled | before ÷ launcher | CPU before | CPU launcher | CPU compiled | before ÷ launcher |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}
| \`node -e 0\` (the floor of any command) | | | ${ms(m('floor'))} | | | | ${ms(m('floor:cpu'))} | |

\`estimate\` on the 10-step worked example (\`examples/get-the-key.json\`, GiGPO), compiled entry run with \`node\`
(goal < 150 ms): ${ms(m('estimate/compiled'))} ms wall, ${ms(m('estimate/compiled:cpu'))} ms CPU; \`node -e 0\`: ${ms(m('floor'))} ms wall,
${ms(m('floor:cpu'))} ms CPU. Through the launcher ${ms(m('estimate/launcher'))} ms wall; through \`npm run -s estimate\`
${ms(m('estimate/npm'))} ms (npm itself is the rest). The first start after an edit (no build for the checkout as it
is: an empty \`CREDITLAB_BUILD_CACHE\`) compiles everything first: ${ms(m('estimate/stale'))} ms wall,
${ms(m('estimate/stale:cpu'))} ms CPU in the launcher's process (swc's threads included). Every variant printed the
same advantages.
`;
  process.stdout.write(body);
  writeSection('startup', body);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
