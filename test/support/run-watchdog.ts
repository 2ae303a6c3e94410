import { spawn } from 'node:child_process';
import path from 'node:path';
import { alive, stopRun } from './process-registry';

/** How often the watchdog looks at the run; a killed run's processes outlive it by about this. */
const POLL_MS = 500;

/**
 * Starts the run's watchdog: a small detached process that stops every process recorded for run
 * `runPid` (its PostgreSQL, servers, CLIs) as soon as that Jest process is gone, then exits. A run
 * that ends normally has stopped them already, so its watchdog finds nothing and exits; a run killed
 * outright (SIGKILL, an out-of-memory kill, a CI job cancelled) no longer leaves them running until
 * the next run.
 */
export function startRunWatchdog(runPid: number): number {
  const child = spawn(
    process.execPath,
    ['-r', '@swc-node/register', path.join(__dirname, 'run-watchdog.ts'), String(runPid)],
    {
      cwd: path.resolve(__dirname, '../..'),
      detached: true, // not in Jest's process group: a signal to the run must not reach it
      stdio: 'ignore',
      env: process.env, // CREDITLAB_TEST_SYSTEM_TMPDIR: where the run's records are
    },
  );
  child.unref();
  return child.pid as number;
}

async function watch(runPid: number): Promise<void> {
  while (alive(runPid)) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  await stopRun(5_000, runPid);
}

if (require.main === module) {
  const runPid = Number(process.argv[2]);
  if (!(runPid > 0))
    throw new Error(`run-watchdog: expected the run's pid, got ${process.argv[2]}`);
  void watch(runPid).then(() => process.exit(0));
}
