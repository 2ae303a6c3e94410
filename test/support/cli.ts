import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnTracked } from './process-registry';

const ROOT = path.resolve(__dirname, '../..');

/** A credentials file that does not exist: a command never finds the user's ~/.creditlab key. */
const NO_CREDENTIALS = path.join(mkdtempSync(path.join(tmpdir(), 'creditlab-cli-')), 'absent.json');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  child: ChildProcess;
  /** Resolves once stderr matches `pattern` (with the match), rejects if the command exits first. */
  stderrMatching(pattern: RegExp): Promise<RegExpMatchArray>;
  result: Promise<CliResult>;
}

/**
 * The environment of a command: this process's, without any Creditlab connection settings (so
 * that only what a test passes counts), plus `env`.
 */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of ['CREDITLAB_URL', 'CREDITLAB_API_KEY', 'CREDITLAB_CREDENTIALS'])
    delete base[name];
  return { ...base, CREDITLAB_CREDENTIALS: NO_CREDENTIALS, ...env };
}

/**
 * Starts `program args` in the repository, or in `cwd` (tracked: it dies with the spec file at the
 * latest).
 */
export function startCommand(
  program: string,
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd = ROOT,
): RunningCli {
  const child = spawnTracked(program, args, {
    cwd,
    env: cliEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
    for (const w of waiters) w();
  });
  const result = new Promise<CliResult>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    child,
    result,
    stderrMatching: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(stderr);
          if (m) resolve(m);
        };
        waiters.push(check);
        check();
        void result.then((r) =>
          reject(new Error(`exited (${r.code}) before stderr matched ${pattern}:\n${r.stderr}`)),
        );
      }),
  };
}

/** `npm run -s <script> -- args`, as a user types it; resolves when it exits. */
export function npmRun(
  script: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<CliResult> {
  return startCommand('npm', ['run', '-s', script, '--', ...args], env).result;
}

/**
 * The same command without npm in between (`node scripts/run-entry.mjs FILE`, what the npm script
 * runs), for signals: npm exits at a Ctrl-C without waiting for its child, so only the command
 * itself can say how it ended.
 */
export function startEntry(
  file: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): RunningCli {
  return startCommand(process.execPath, ['scripts/run-entry.mjs', file, ...args], env);
}
