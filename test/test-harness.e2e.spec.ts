import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reapOrphans, spawnTracked, track } from './support/process-registry';
import { startRunWatchdog } from './support/run-watchdog';

/**
 * The suite's own safety net: a spec file whose hook times out while a process it started is
 * running still ends, and takes that process with it (the test environment stops it), so a slow
 * machine turns into a failed test rather than a Jest that never exits.
 */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('a timed-out hook: Jest exits by itself and the process the hook started is gone', async () => {
  const pidFile = path.join(mkdtempSync(path.join(tmpdir(), 'creditlab-harness-')), 'pid');
  const root = path.resolve(__dirname, '..');
  const jest = spawn(
    process.execPath,
    [require.resolve('jest/bin/jest'), '--config', 'test/fixtures/jest/jest.config.js', '--ci'],
    { cwd: root, env: { ...process.env, PID_FILE: pidFile }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  jest.stdout.on('data', (c: Buffer) => (output += c.toString()));
  jest.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      jest.kill('SIGKILL');
      resolve(null);
    }, 120_000);
    jest.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  expect(output).toMatch(/Exceeded timeout of 1000 ms for a hook/);
  expect(code).toBe(1); // failed, and exited on its own (null: still running after 2 minutes)
  const pid = Number(readFileSync(pidFile, 'utf8'));
  expect(pid).toBeGreaterThan(0);
  expect(alive(pid)).toBe(false);
});

test('processes of an earlier run that was killed outright are stopped by the next run', async () => {
  // A run whose Jest process is gone: a child that exits at once stands in for its dead main process.
  const dead = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => dead.once('exit', resolve));
  const orphan = spawnTracked(process.execPath, ['-e', 'setInterval(() => undefined, 1000)'], {
    stdio: 'ignore',
    env: { ...process.env },
  });
  const pid = orphan.pid as number;
  const previous = process.env.CREDITLAB_TEST_RUN;
  // Re-record the orphan as belonging to the dead run.
  process.env.CREDITLAB_TEST_RUN = String(dead.pid);
  track(pid, 'orphan of a killed run', true);
  process.env.CREDITLAB_TEST_RUN = previous;
  expect(alive(pid)).toBe(true);
  await reapOrphans(2000);
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(alive(pid)).toBe(false);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const idle = ['-e', 'setInterval(() => undefined, 1000)'];

test('a run killed outright: its watchdog stops the processes it started within seconds, then exits', async () => {
  // A stand-in for a run's Jest process, and a process recorded as that run's.
  const run = spawn(process.execPath, idle, { stdio: 'ignore' });
  const previous = process.env.CREDITLAB_TEST_RUN;
  process.env.CREDITLAB_TEST_RUN = String(run.pid);
  let started: number;
  try {
    started = spawnTracked(process.execPath, idle, { stdio: 'ignore', env: { ...process.env } })
      .pid as number;
  } finally {
    process.env.CREDITLAB_TEST_RUN = previous;
  }
  const watchdog = startRunWatchdog(run.pid as number);
  await sleep(2000);
  expect([alive(started), alive(watchdog)]).toEqual([true, true]); // the run lives: nothing stopped
  run.kill('SIGKILL');
  for (let i = 0; i < 100 && (alive(started) || alive(watchdog)); i++) await sleep(100);
  expect([alive(started), alive(watchdog)]).toEqual([false, false]);
});

test('this run has its watchdog', () => {
  const run = process.env.CREDITLAB_TEST_RUN as string;
  const watchdogs = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        return [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')];
      } catch {
        return []; // exited meanwhile
      }
    })
    .filter((args) => args.some((a) => a.endsWith('run-watchdog.ts')) && args.at(-2) === run);
  expect(watchdogs).toHaveLength(1);
});

test('temporary files of the run go into its scratch folder (removed by global teardown), not the machine’s', () => {
  const system = process.env.CREDITLAB_TEST_SYSTEM_TMPDIR as string;
  expect(system).toBeTruthy();
  expect(path.dirname(tmpdir())).toBe(path.resolve(system));
  expect(path.basename(tmpdir())).toMatch(/^creditlab-test-run-/);
});
