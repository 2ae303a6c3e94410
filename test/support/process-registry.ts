import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Every process a test run starts (servers, CLIs, its PostgreSQL) is recorded here, one file per
 * process, so that none outlives the run whatever fails: the test environment kills a worker's
 * processes when its spec file ends (even after a timed-out hook), a worker kills them when it
 * exits, global teardown kills the run's own, and the run's watchdog (run-watchdog.ts) kills them
 * when the run was killed outright (a SIGKILLed Jest cannot take its children with it); global
 * setup kills what an earlier run's watchdog could not (a machine that stopped, say).
 */
const REGISTRY_DIR = path.join(
  // The machine's temporary folder, not the run's scratch folder (global-setup.ts): the next run
  // must find the records of a run that was killed outright.
  process.env.CREDITLAB_TEST_SYSTEM_TMPDIR ?? tmpdir(),
  'creditlab-test-processes',
);

interface Record {
  pid: number;
  /** The process that started it (a Jest worker, or the main Jest process); 0: the run itself. */
  owner: number;
  /** The main Jest process of the run (CREDITLAB_TEST_RUN), alive while the run is. */
  run: number;
  /** Whether it leads its own process group (then the whole group is signalled). */
  group: boolean;
  label: string;
}

const runPid = (): number => Number(process.env.CREDITLAB_TEST_RUN ?? process.pid);

/** Whether process `pid` exists (EPERM: it does, as another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signal(record: Record, sig: NodeJS.Signals): void {
  try {
    process.kill(record.group ? -record.pid : record.pid, sig);
  } catch {
    // already gone
  }
}

function records(): Record[] {
  let names: string[];
  try {
    names = readdirSync(REGISTRY_DIR);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      return [JSON.parse(readFileSync(path.join(REGISTRY_DIR, name), 'utf8')) as Record];
    } catch {
      return [];
    }
  });
}

const forget = (pid: number) => rmSync(path.join(REGISTRY_DIR, `${pid}.json`), { force: true });

/** Drops the record of a process its starter stopped itself (so that its pid, reused, is left alone). */
export const untrack = forget;

/**
 * Records a process: one a spec file started (stopped when the file ends), or with `scope: 'run'`
 * one of the whole run (its PostgreSQL, found by its pid file; stopped by global teardown).
 */
export function track(
  pid: number,
  label: string,
  group = false,
  scope: 'file' | 'run' = 'file',
): void {
  mkdirSync(REGISTRY_DIR, { recursive: true });
  const owner = scope === 'run' ? 0 : process.pid;
  const record: Record = { pid, owner, run: runPid(), group, label };
  writeFileSync(path.join(REGISTRY_DIR, `${pid}.json`), JSON.stringify(record));
  installExitHook();
}

/**
 * `spawn`, in a process group of its own (so that its children — an embedded PostgreSQL, worker
 * processes — are signalled with it), recorded until it exits.
 */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid !== undefined) {
    const pid = child.pid;
    track(pid, `${command} ${args.join(' ')}`.slice(0, 200), true);
    child.once('exit', () => forget(pid));
  }
  return child;
}

/** SIGTERM, then SIGKILL for whatever has not exited after `graceMs`. */
async function stop(list: Record[], graceMs: number): Promise<void> {
  const living = list.filter((r) => alive(r.pid));
  for (const r of living) signal(r, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (living.some((r) => alive(r.pid)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  for (const r of living) if (alive(r.pid)) signal(r, 'SIGKILL');
  for (const r of list) forget(r.pid);
}

/** Stops every process this process started that is still running. */
export function stopOwned(graceMs = 10_000): Promise<void> {
  return stop(
    records().filter((r) => r.owner === process.pid),
    graceMs,
  );
}

/** Stops every process of run `run` (global teardown: this run; the run's watchdog: its run, killed). */
export function stopRun(graceMs = 10_000, run = runPid()): Promise<void> {
  return stop(
    records().filter((r) => r.run === run),
    graceMs,
  );
}

/** Stops the processes of earlier runs whose Jest process is gone (global setup). */
export function reapOrphans(graceMs = 10_000): Promise<void> {
  return stop(
    records().filter((r) => r.run !== runPid() && !alive(r.run)),
    graceMs,
  );
}

let hooked = false;
/** A worker that exits (or is told to stop) takes its processes with it, at once. */
function installExitHook(): void {
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const r of records()) {
      if (r.owner !== process.pid) continue;
      signal(r, 'SIGKILL');
      forget(r.pid);
    }
  };
  process.once('exit', killAll);
}
