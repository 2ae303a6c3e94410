import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** What the system says about another process: read from /proc on Linux, from `ps` elsewhere. */

/** Whether a process runs: it exists (EPERM: it belongs to someone else) and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A process that ended but was not reaped yet (its new parent, pid 1 of a container, may take
  // its time) still answers signals; it has state Z.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

const ps = (pid: number, field: string): Promise<string | undefined> =>
  new Promise((resolve) =>
    execFile('ps', ['-o', `${field}=`, '-p', String(pid)], { timeout: 5000 }, (err, stdout) =>
      resolve(err ? undefined : stdout.trim() || undefined),
    ),
  );

/** The command line of a running process (arguments joined by spaces), if it can be read. */
export async function commandLine(pid: number): Promise<string | undefined> {
  try {
    const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter(Boolean).join(' ') || undefined;
  } catch {
    return process.platform === 'linux' ? undefined : ps(pid, 'command');
  }
}

/** The parent of a running process, if it can be read. */
export async function parentPid(pid: number): Promise<number | undefined> {
  let text: string | undefined;
  try {
    // Fields after the command name, which is in parentheses and may itself contain any character.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    text = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  } catch {
    text = process.platform === 'linux' ? undefined : await ps(pid, 'ppid');
  }
  const ppid = Number(text);
  return Number.isInteger(ppid) && ppid >= 0 ? ppid : undefined;
}

/** Resolves once `pid` is gone, or with false after `ms`. */
export async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}
