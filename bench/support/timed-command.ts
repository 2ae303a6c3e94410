import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** GNU time, when installed: the CPU time a command used, which the machine's load barely moves. */
const GNU_TIME = '/usr/bin/time';

export interface TimedCommand {
  argv: [string, ...string[]];
  env?: Record<string, string | undefined>;
  /** Stop the clock when stdout matches this (then SIGTERM the process); else at its exit. */
  until?: RegExp;
}

export interface Timing {
  ms: number;
  /** User + system CPU time in ms (10 ms resolution), for commands that exit, when GNU time exists. */
  cpuMs?: number;
  stdout: string;
  stderr: string;
}

/**
 * Wall time of one start of `command`, from spawn to its exit (status 0 required) or to the line
 * it is waited for. A process that is waited for is stopped afterwards, outside the measurement.
 */
export async function timeCommand(command: TimedCommand, cwd: string): Promise<Timing> {
  if (command.until || !existsSync(GNU_TIME)) return timeWall(command, cwd);
  const dir = mkdtempSync(path.join(tmpdir(), 'creditlab-bench-time-'));
  const out = path.join(dir, 'cpu');
  try {
    const timing = await timeWall(
      { ...command, argv: [GNU_TIME, '-f', '%U %S', '-o', out, ...command.argv] },
      cwd,
    );
    const [user, system] = readFileSync(out, 'utf8').trim().split(/\s+/).map(Number);
    return { ...timing, cpuMs: ((user as number) + (system as number)) * 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function timeWall(command: TimedCommand, cwd: string): Promise<Timing> {
  const [program, ...args] = command.argv;
  const started = performance.now();
  const child = spawn(program, args, {
    cwd,
    env: { ...process.env, ...command.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    let ms: number | undefined;
    const failed = (why: string) =>
      reject(new Error(`${command.argv.join(' ')}: ${why}\n${stdout}\n${stderr}`));
    if (command.until) {
      const until = command.until;
      child.stdout.on('data', () => {
        if (ms === undefined && until.test(stdout)) {
          ms = performance.now() - started;
          child.kill('SIGTERM');
        }
      });
    }
    child.once('error', (e) => failed(e.message));
    child.once('close', (code) => {
      if (command.until)
        return ms === undefined
          ? failed(`exited (${code}) first`)
          : resolve({ ms, stdout, stderr });
      if (code !== 0) return failed(`exit status ${code}`);
      resolve({ ms: performance.now() - started, stdout, stderr });
    });
  });
}
