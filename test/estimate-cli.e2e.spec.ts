import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFORMANCE_DIR } from './support/conformance-dir';

/** The real command as a user runs it: `npm run -s estimate -- ...` in a child process. */
const root = path.resolve(__dirname, '..');
function estimateCmd(args: string[], input?: string) {
  const r = spawnSync('npm', ['run', '-s', 'estimate', '--', ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('reads a fixture file and prints advantages/v1', () => {
  const file = path.join(CONFORMANCE_DIR, 'spec/spec-s1-c3.json');
  const dir = mkdtempSync(path.join(tmpdir(), 'creditlab-estimate-'));
  const batchFile = path.join(dir, 'batch.json');
  writeFileSync(
    batchFile,
    JSON.stringify((JSON.parse(readFileSync(file, 'utf8')) as { batch: unknown }).batch),
  );
  const r = estimateCmd([
    '--method',
    'gigpo',
    '--param',
    'gamma=0.95',
    '--param',
    'stepWeight=1',
    '--input',
    batchFile,
    '--timing',
  ]);
  expect(r.stderr).toMatch(/^timing: read\+parse .* \(36 steps, gigpo\)\n$/);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout);
  expect(out.method).toBe('gigpo');
  expect(out.groups.length).toBe(3);
});

test('reads stdin when --input is absent', () => {
  const batch = {
    format: 'rollout-batch/v1',
    groups: [
      { id: 'g', trajectories: [{ id: 't', steps: [{ state: 's', action: 'a', reward: 1 }] }] },
    ],
  };
  const r = estimateCmd(['--method', 'reinforce'], JSON.stringify(batch));
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout).groups[0].trajectories[0].advantages).toEqual([1]);
});

test('bad input exits 2 with the message on stderr and nothing on stdout', () => {
  const r = estimateCmd(['--method', 'grpo'], '{"format": "rollout-batch/v1", "groups": [');
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toContain('estimate: input is not valid JSON');
});
