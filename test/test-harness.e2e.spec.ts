import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reapOrphans, spawnTracked, track } from './support/process-registry';

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

test('temporary files of the run go into its scratch folder (removed by global teardown), not the machine’s', () => {
  const system = process.env.CREDITLAB_TEST_SYSTEM_TMPDIR as string;
  expect(system).toBeTruthy();
  expect(path.dirname(tmpdir())).toBe(path.resolve(system));
  expect(path.basename(tmpdir())).toMatch(/^creditlab-test-run-/);
});
