import { npmRun, type CliResult } from './support/cli';

/**
 * Every command's `--help` (usage, every flag with its default, an example; exit 0) and its
 * mistakes (exit 2, one line on stderr, no stack trace), as users type them. None of these reaches
 * a server or a database: `cliEnv` points the credentials at a file that does not exist.
 */

/** The flag lines of a help text: each must say its default. */
function flagLines(help: string): string[] {
  const options = help.split('\noptions:\n')[1]?.split('\n\n')[0] ?? '';
  return options.split('\n').filter((l) => /^\s+-/.test(l));
}

function expectHelp(r: CliResult, flags: string[]): void {
  expect(r).toMatchObject({ code: 0, stderr: '' });
  expect(r.stdout).toMatch(/^usage: /);
  expect(r.stdout).toMatch(/\nexamples:\n {2}\S/);
  const lines = flagLines(r.stdout);
  for (const flag of [...flags, '--help'])
    expect(lines.some((l) => new RegExp(`(^|\\s|, )${flag}\\b`).test(l))).toBe(true);
  for (const line of lines) expect(line).toMatch(/\(default: .+\)$/);
}

/**
 * The commands' environment: db:migrate gets a database nothing listens on, so that if it ever
 * went past its arguments it would fail at once rather than start an embedded PostgreSQL.
 */
const ENV = { DATABASE_URL: 'postgres://creditlab@127.0.0.1:9/none' };

function expectMistake(r: CliResult, message: RegExp): void {
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

const TRAIN_FLAGS = ['--env', '--method', '--param', '--iterations', '--tasks', '--group-size'];
const MORE_TRAIN_FLAGS = [
  '--seed',
  '--checkpoint-every',
  '--fork',
  '--from-checkpoint',
  '--retrain',
];

test.concurrent.each([
  ['train', [], [...TRAIN_FLAGS, ...MORE_TRAIN_FLAGS, '--server', '--key']],
  ['experiment', [], ['--env', '--methods', '--seeds', '--iterations', '--out', '--server']],
  [
    'admin',
    ['create-key'],
    ['--role', '--project', '--name', '--rate-limit', '--server', '--json'],
  ],
  ['admin', ['finish-run'], ['--status', '--reason', '--server', '--key']],
  ['admin', ['env'], ['--server', '--key']],
  ['admin', ['keys'], ['--project', '--all']],
  ['admin', ['whoami'], ['--server', '--key', '--json']],
  ['admin', ['projects'], ['--json']],
  ['admin', ['create-project'], ['--description']],
  ['admin', ['revoke-key'], ['--server']],
  ['estimate', [], ['--method', '--param', '--input', '--no-diagnostics', '--list', '--json']],
  ['db:migrate', [], []],
])('npm run %s -- %j --help', async (script, command, flags) => {
  expectHelp(await npmRun(script, [...command, '--help'], ENV), flags);
});

test('npm run admin -- --help lists every command', async () => {
  const r = await npmRun('admin', ['--help']);
  expect(r.code).toBe(0);
  for (const command of ['whoami', 'env', 'projects', 'create-project', 'keys', 'create-key'])
    expect(r.stdout).toMatch(new RegExp(`\\n {2}${command} `));
  expect(r.stdout).toMatch(/\n {2}revoke-key .*\n {2}finish-run /);
});

test.concurrent.each([
  ['train', ['--frobnicate'], /^train: Unknown option '--frobnicate'/],
  ['train', ['--iterations', 'x'], /^train: --iterations: a whole number ≥ 1, got "x"/],
  ['train', ['--iterations'], /^train: Option '--iterations <value>' argument missing/],
  ['train', ['--seed', '-1'], /^train: Option '--seed' argument is ambiguous/],
  ['train', ['--fork', 'x', '--retrain', 'y'], /--retrain cannot be used with --fork/],
  ['train', ['--from-checkpoint', '3'], /--from-checkpoint needs --fork/],
  ['train', ['--env', 'mars'], /--env: unknown environment "mars"; one of household-tiny/],
  ['train', ['--param', 'gamma=2'], /--param: parameter "gamma" of method "gigpo" must be/],
  ['train', ['extra'], /^train: Unexpected argument 'extra'/],
  ['experiment', ['--frobnicate'], /^experiment: Unknown option '--frobnicate'/],
  ['experiment', ['--seeds', '0'], /^experiment: --seeds: a whole number ≥ 1, got "0"/],
  ['experiment', ['--methods', 'grpo,nope'], /--methods: unknown method "nope"/],
  [
    'experiment',
    ['--methods', 'grpo,bipace@clusterEpsilon=3'],
    /^experiment: --methods: parameter "clusterEpsilon" of method "bipace" must be/,
  ],
  ['experiment', ['--methods', 'bipace@eps'], /^experiment: --methods expects key=value/],
  ['experiment', ['--truth-only', '--report-only'], /^experiment: --truth-only and --report-only/],
  [
    'experiment',
    ['--truth-only', '--truth-iterations', '0'],
    /^experiment: --truth-only needs --truth-iterations of at least 1/,
  ],
  [
    'experiment',
    ['--truth-only', '--env', 'household-small'],
    /^experiment: --truth-only: household-small has no exact advantages/,
  ],
  ['admin', [], /^admin: the command comes first/],
  ['admin', ['--json'], /^admin: the command comes first/],
  ['admin', ['frobnicate'], /^admin: unknown command "frobnicate"; one of whoami, env/],
  ['admin', ['whoami', '--role', 'x'], /^admin: Unknown option '--role'/],
  ['admin', ['create-key', '--role', 'owner'], /--role: one of read, write, admin, got "owner"/],
  [
    'admin',
    ['create-key', '--role', 'read', '--rate-limit', '0'],
    /--rate-limit: a whole number ≥ 1/,
  ],
  ['admin', ['finish-run'], /expected RUN, got nothing/],
  ['admin', ['finish-run', 'r', '--status', 'done'], /--status: one of failed, aborted, completed/],
  [
    'admin',
    ['env'],
    /^admin: no API key for http:\/\/127\.0\.0\.1:4000: .*absent\.json holds none/,
  ],
  ['estimate', ['--frobnicate'], /^estimate: Unknown option '--frobnicate'/],
  ['estimate', ['--method', 'nope'], /^estimate: unknown method "nope"/],
  ['db:migrate', ['--frobnicate'], /^db:migrate: Unknown option '--frobnicate'/],
])('npm run %s -- %j exits 2 with one line', async (script, args, message) => {
  expectMistake(await npmRun(script, args, ENV), message);
});
