import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExperimentData } from '../apps/trainer/src/experiment-data';
import { npmRun } from './support/cli';

/**
 * An experiment arm with parameters (`bipace@clusterEpsilon=2`): trained with those parameters, kept
 * under its own name, and tested in a Holm family of its own (against GRPO and against the method at
 * its defaults), so the main table's family is the same as without it.
 */
test('an arm with parameters trains with them and is reported in its own family', async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'creditlab-arms-'));
  const arm = 'bipace@clusterEpsilon=2';
  const r = await npmRun('experiment', [
    ...['--in-process', '--env', 'errand-tiny', '--methods', `grpo,bipace,${arm}`],
    ...['--seeds', '2', '--iterations', '1', '--tasks', '4', '--group-size', '4'],
    ...['--eval-tasks', '1', '--truth-iterations', '0', '--out', out],
  ]);
  expect(r.code).toBe(0);
  const data = JSON.parse(
    await readFile(path.join(out, 'data', 'experiments-errand-tiny.json'), 'utf8'),
  ) as ExperimentData;
  const runs = (method: string) => data.runs.filter((x) => x.method === method);
  expect(runs(arm).map((x) => x.seed)).toEqual([1, 2]);
  // the same seeds and rollouts, other clusters: ε = 2 merges every state of a group
  const rms = (method: string) => runs(method).map((x) => x.advantageRms[0]);
  expect(rms(arm)).not.toEqual(rms('bipace'));
  const report = await readFile(path.join(out, 'experiments.md'), 'utf8');
  expect(report).toContain('## errand-tiny: 2 methods and 1 arm with parameters');
  expect(report).toContain('Holm-adjusted over the 1 comparisons');
  expect(report).toContain('one Holm family of 2 comparisons');
  expect(report).toMatch(/\n\| bipace@clusterEpsilon=2 \| grpo \| 2 \| /);
  expect(report).toMatch(/\n\| bipace@clusterEpsilon=2 \| bipace \| 2 \| /);
  // not in the main table (the value loss table lists every arm)
  const main = report.slice(report.indexOf('| method | seeds |')).split('\n\n')[0]!;
  expect(main).toMatch(/\n\| bipace \| 2 \| /);
  expect(main).not.toMatch(/\n\| bipace@clusterEpsilon=2 \| 2 \| /);
});

test('--truth-only refuses an experiments.md without the truth table, before training anything', async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'creditlab-truth-only-'));
  const r = await npmRun('experiment', [
    ...['--in-process', '--env', 'errand-tiny', '--methods', 'grpo', '--truth-only'],
    ...['--tasks', '2', '--group-size', '2', '--truth-iterations', '1', '--out', out],
  ]);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/has no truth table of errand-tiny to replace/);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  await expect(stat(path.join(out, 'data'))).rejects.toThrow('ENOENT');
});
