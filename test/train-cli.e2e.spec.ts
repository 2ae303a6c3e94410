import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExperimentData } from '../apps/trainer/src/experiment-data';
import type { TruthRow } from '../apps/trainer/src/experiment-truth';
import { npmRun, startEntry, type CliResult } from './support/cli';
import { readIteration } from './support/read-back';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * `npm run train` and `npm run experiment` as users run them: child processes against a real
 * server, at tiny sizes; what they did is read back through the API.
 */
let server: ServerProcess & { databaseUrl: string };
/** What `eval "$(npm run -s admin -- env)"` exports: the commands get no --server or --key. */
let env: Record<string, string>;
/** A 5-iteration run with checkpoints 3 and 5, parent of the forks and retrains below. */
let parent: string;
let parentOutput: CliResult;

const TINY = ['--tasks', '2', '--group-size', '2'];
const UUID_LINE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/;

interface RunView {
  status: string;
  parentRunId: string | null;
  forkIteration: number | null;
  method: string;
  config: { iterations: number; checkpointEvery: number; backend: string; env: string };
  summary: Record<string, unknown> | null;
  iterations: { index: number; stepCount: number }[];
  advantageSets: { method: string; iterations: number[] }[];
  events: { nodes: { type: string; iteration: number | null; data: Record<string, unknown> }[] };
}

async function runView(id: string): Promise<RunView> {
  const res = await gql<{ run: RunView }>(
    server,
    `query($id: ID!) { run(id: $id) { status parentRunId forkIteration method config summary
       iterations { index stepCount } advantageSets { method iterations }
       events(first: 1000) { nodes { type iteration data } } } }`,
    { id },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data!.run;
}

async function runIds(): Promise<string[]> {
  const res = await gql<{ runs: { nodes: { id: string }[] } }>(
    server,
    '{ runs(first: 100) { nodes { id } } }',
  );
  return res.data!.runs.nodes.map((r) => r.id);
}

/** The `iteration k/N` of each progress line. */
const progress = (stderr: string) => [...stderr.matchAll(/iteration (\d+\/\d+)/g)].map((m) => m[1]);

/**
 * A run made through the API with `parent`'s config, whose iterations 0 … n−1 all hold `parent`'s
 * iteration 0 rollouts (`edit` may change them): a parent for retrains that must be long, or broken.
 */
async function copiedParent(
  iterations: number,
  edit: (steps: { action: string }[]) => void = () => undefined,
): Promise<string> {
  const { config } = await runView(parent);
  const groups = (await readIteration(server, parent, 0)).map((g) => ({
    id: g.id,
    trajectories: g.trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome as 'success' | 'failure' | 'truncated',
      steps: t.steps.map((s) => ({
        ...s.extra, // what the trainer logged beside the fields: the task each step was taken in
        state: s.state,
        action: s.action,
        reward: s.reward,
        nll: s.nll ?? 0,
      })),
    })),
  }));
  edit(groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps)));
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({
    name: 'copied',
    env: config.env,
    method: 'grpo',
    config,
  });
  for (let i = 0; i < iterations; i++) await client.appendEvents(id, rolloutEvents(i, { groups }));
  return id;
}

beforeAll(async () => {
  server = await startTestServer();
  env = { CREDITLAB_URL: server.url, CREDITLAB_API_KEY: ADMIN_KEY };
  parentOutput = await npmRun(
    'train',
    ['--iterations', '5', ...TINY, '--checkpoint-every', '3', '--method', 'grpo'],
    env,
  );
  parent = parentOutput.stdout.trim();
});

afterAll(() => server.stop());

test('train: prints the run id, shows progress of N, and leaves a completed run with checkpoints every --checkpoint-every', async () => {
  expect(parentOutput).toMatchObject({ code: 0, stdout: expect.stringMatching(UUID_LINE) });
  expect(progress(parentOutput.stderr)).toEqual(['1/5', '2/5', '3/5', '4/5', '5/5']);
  const run = await runView(parent);
  expect(run).toMatchObject({
    status: 'COMPLETED',
    method: 'grpo',
    config: { iterations: 5, checkpointEvery: 3 },
  });
  const types = run.events.nodes.map((e) => e.type);
  expect(types.filter((t) => t === 'METRICS_LOGGED')).toHaveLength(5);
  expect(types.at(-1)).toBe('RUN_FINISHED');
  expect(
    run.events.nodes.filter((e) => e.type === 'CHECKPOINT_SAVED').map((e) => e.data.iteration),
  ).toEqual([3, 5]);
});

test('train --fork RUN: the parent’s config and iteration count under another method, from scratch', async () => {
  const r = await npmRun('train', ['--fork', parent, '--method', 'gigpo'], env);
  expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(UUID_LINE) });
  expect(progress(r.stderr)).toEqual(['1/5', '2/5', '3/5', '4/5', '5/5']);
  const run = await runView(r.stdout.trim());
  expect(run).toMatchObject({
    status: 'COMPLETED',
    parentRunId: parent,
    forkIteration: 0,
    method: 'gigpo',
    config: { iterations: 5 },
  });
  expect(run.iterations.map((i) => i.index)).toEqual([0, 1, 2, 3, 4]);
});

test('train --fork RUN --from-checkpoint K starts at iteration K of the parent’s N', async () => {
  const r = await npmRun(
    'train',
    ['--fork', parent, '--from-checkpoint', '3', '--method', 'gaca'],
    env,
  );
  expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(UUID_LINE) });
  expect(progress(r.stderr)).toEqual(['4/5', '5/5']);
  const run = await runView(r.stdout.trim());
  expect(run).toMatchObject({ status: 'COMPLETED', parentRunId: parent, forkIteration: 3 });
  expect(run.advantageSets).toEqual([{ method: 'gaca', iterations: [3, 4] }]);
});

test('train --retrain RUN: the parent’s iterations again under another method, in a completed run', async () => {
  const r = await npmRun('train', ['--retrain', parent, '--method', 'gagpo'], env);
  expect(r).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(UUID_LINE),
    stderr: expect.not.stringContaining('backend'),
  });
  expect(progress(r.stderr)).toEqual(['1/5', '2/5', '3/5', '4/5', '5/5']);
  const run = await runView(r.stdout.trim());
  expect(run).toMatchObject({ status: 'COMPLETED', parentRunId: parent });
  expect(['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']).toContain(run.config.backend);
  expect(run.advantageSets).toEqual([{ method: 'gagpo', iterations: [0, 1, 2, 3, 4] }]);
  // --iterations N: only the parent's first N
  const two = await npmRun('train', ['--retrain', parent, '--iterations', '2'], env);
  expect(two.code).toBe(0);
  expect(progress(two.stderr)).toEqual(['1/2', '2/2']);
  expect((await runView(two.stdout.trim())).iterations.map((i) => i.index)).toEqual([0, 1]);
});

test('a retrain that fails marks its run failed, says why on one line and exits 1', async () => {
  const broken = await copiedParent(1, (steps) => {
    steps[0]!.action = 'dance on the table';
  });
  const before = await runIds();
  const r = await npmRun('train', ['--retrain', broken, '--method', 'grpo'], env);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    /^train: run \S+ iteration 0, trajectory "[^"]+", step 0: action "dance on the table" is not admissible/m,
  );
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
  const created = (await runIds()).filter((id) => !before.includes(id));
  expect(created).toHaveLength(1);
  const run = await runView(created[0]!);
  expect(run.status).toBe('FAILED');
  expect(run.summary).toMatchObject({ error: expect.stringContaining('not admissible') });
});

describe('Ctrl-C finishes the run as aborted and exits 130', () => {
  test('train', async () => {
    const cli = startEntry(
      'apps/trainer/src/train-main.ts',
      ['--iterations', '1000', ...TINY, '--checkpoint-every', '0'],
      env,
    );
    await cli.stderrMatching(/iteration 1\/1000/);
    cli.child.kill('SIGINT');
    const r = await cli.result;
    expect(r).toMatchObject({ code: 130, stdout: expect.stringMatching(UUID_LINE) });
    const run = await runView(r.stdout.trim());
    expect(run.status).toBe('ABORTED');
    expect(run.iterations.length).toBeLessThan(1000);
  });

  test('retrain', async () => {
    const long = await copiedParent(100);
    const cli = startEntry('apps/trainer/src/train-main.ts', ['--retrain', long], env);
    await cli.stderrMatching(/iteration 1\/100/);
    cli.child.kill('SIGINT');
    const r = await cli.result;
    expect(r).toMatchObject({ code: 130, stdout: expect.stringMatching(UUID_LINE) });
    const run = await runView(r.stdout.trim());
    expect(run.status).toBe('ABORTED');
    expect(run.advantageSets[0]!.iterations.length).toBeLessThan(100);
  });

  test('experiment, which writes no report then', async () => {
    const out = await mkdtemp(path.join(tmpdir(), 'creditlab-experiment-'));
    const cli = startEntry(
      'apps/trainer/src/experiment-main.ts',
      [
        ...['--server', server.url, '--iterations', '1000', ...TINY, '--truth-iterations', '0'],
        '--out',
        out,
      ],
      env,
    );
    const runId = (await cli.stderrMatching(/run (\S+): 1000 iterations/))[1]!;
    cli.child.kill('SIGINT');
    expect((await cli.result).code).toBe(130);
    expect((await runView(runId)).status).toBe('ABORTED');
    await expect(stat(path.join(out, 'experiments.md'))).rejects.toThrow('ENOENT');
  });
});

test('a trainer killed outright leaves its run running, and npm run admin -- finish-run finishes it', async () => {
  const cli = startEntry(
    'apps/trainer/src/train-main.ts',
    ['--iterations', '1000', ...TINY, '--checkpoint-every', '0'],
    env,
  );
  const runId = (await cli.stderrMatching(/run (\S+): iterations/))[1]!;
  await cli.stderrMatching(/iteration 1\/1000/);
  cli.child.kill('SIGKILL');
  await cli.result;
  expect((await runView(runId)).status).toBe('RUNNING');
  const finish = (status: string) =>
    npmRun('admin', ['finish-run', runId, '--status', status, '--reason', 'node lost'], env);
  const done = await finish('failed');
  expect(done).toMatchObject({
    code: 0,
    stdout: expect.stringContaining(`run ${runId} marked failed`),
  });
  const run = await runView(runId);
  expect(run).toMatchObject({
    status: 'FAILED',
    summary: { reason: 'node lost', finishedBy: 'npm run admin -- finish-run' },
  });
  expect(run.events.nodes.at(-1)).toMatchObject({
    type: 'RUN_FINISHED',
    data: { status: 'failed' },
  });
  // the same again changes nothing; another status is refused
  expect((await finish('failed')).code).toBe(0);
  const refused = await finish('completed');
  expect(refused).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/^admin: .*is already failed/),
  });
  expect((await runView(runId)).events.nodes).toHaveLength(run.events.nodes.length);
});

test('what cannot be done exits 2 with one line and creates nothing', async () => {
  const before = await runIds();
  for (const [args, message] of [
    [['--fork', '11111111-1111-4111-8111-111111111111'], /run 1{8}-\S+ not found/],
    [['--fork', parent, '--from-checkpoint', '2'], /has no checkpoint 2; it has 3, 5/],
    [['--fork', parent, '--from-checkpoint', '5'], /nothing to train/],
    [['--retrain', parent, '--iterations', '9'], /has rollouts for iterations 0, 1, 2, 3, 4/],
  ] as const) {
    const r = await npmRun('train', [...args], env);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  }
  expect(await runIds()).toEqual(before);
});

test('experiment --server: every method and seed trained there, scored against the truth, report written to --out', async () => {
  const out = await mkdtemp(path.join(tmpdir(), 'creditlab-experiment-'));
  const before = await runIds();
  const r = await npmRun(
    'experiment',
    [
      ...['--server', server.url, '--key', ADMIN_KEY, '--methods', 'grpo,gigpo', '--seeds', '1'],
      ...['--iterations', '2', ...TINY, '--truth-iterations', '1', '--out', out],
    ],
    {},
  );
  expect(r.code).toBe(0);
  const created = (await runIds()).filter((id) => !before.includes(id));
  const runs = await Promise.all(created.map(runView));
  expect(runs.map((x) => x.method).sort()).toEqual(['gigpo', 'grpo', 'grpo']); // the truth run is GRPO
  expect(runs.every((x) => x.status === 'COMPLETED')).toBe(true);
  const report = await readFile(path.join(out, 'experiments.md'), 'utf8');
  expect(report).toContain('--tasks 2 --group-size 2 --truth-iterations 1');
  expect(report).toMatch(/\n\| grpo \| .*\n\| gigpo \| /);
  expect(report).toMatch(/within-group Pearson − GRPO's \[95 % CI\] \|\n[^]*\| gigpo \| /);
  const dataFile = path.join(out, 'data', 'experiments-household-tiny.json');
  expect((await stat(path.join(out, 'experiments-household-tiny.png'))).size).toBeGreaterThan(0);
  // --report-only: the same data, more seeds and a method asked for than were run; nothing is trained
  const again = await npmRun(
    'experiment',
    [
      ...['--report-only', '--methods', 'grpo,gigpo,gaca', '--seeds', '3', '--iterations', '2'],
      ...['--data', path.join(out, 'data', 'experiments-household-tiny.json'), '--out', out],
    ],
    {},
  );
  expect(again.code).toBe(0);
  expect((await runIds()).sort()).toEqual([...before, ...created].sort());
  const partial = await readFile(path.join(out, 'experiments.md'), 'utf8');
  expect(partial).toContain('up to 1 of 3 paired seeds');
  expect(partial).toMatch(/\n\| grpo \| 1 \| .*\n\| gigpo \| 1 \| .*\n\| gaca \| 0 \| /);
  // --truth-only: one new GRPO run (larger, so that some groups succeed), its scores in the data
  // file, only the truth table rewritten
  const truthOnly = await npmRun(
    'experiment',
    [
      ...['--server', server.url, '--key', ADMIN_KEY, '--methods', 'grpo,gaca', '--truth-only'],
      ...['--tasks', '8', '--group-size', '4', '--truth-iterations', '1'],
      ...['--data', dataFile, '--out', out],
    ],
    {},
  );
  expect(truthOnly.code).toBe(0);
  const latest = (await runIds()).filter((id) => ![...before, ...created].includes(id));
  expect(latest).toHaveLength(1);
  const redone = (JSON.parse(await readFile(dataFile, 'utf8')) as ExperimentData).truth!;
  expect(redone.runId).toBe(latest[0]);
  const [grpo, gaca] = redone.rows as TruthRow[];
  expect(grpo).toMatchObject({ method: 'grpo', groups: 8, groupPearsonMinusGrpo: null });
  expect(gaca!.method).toBe('gaca');
  expect(gaca!.groupSpearman.estimate).toEqual(expect.any(Number));
  // the server lists GRPO − GACA; the row holds GACA − GRPO
  expect(gaca!.groupPearsonMinusGrpo!.estimate).toBeCloseTo(
    gaca!.groupPearson.estimate! - grpo!.groupPearson.estimate!,
    12,
  );
  const outside = (doc: string) =>
    doc.replace(/truth:household-tiny:start[^]*?truth:household-tiny:end/, '');
  const rewritten = await readFile(path.join(out, 'experiments.md'), 'utf8');
  expect(outside(rewritten)).toBe(outside(partial));
  expect(rewritten).not.toBe(partial);
  expect(rewritten).toMatch(/--truth-only[^]*\n\| gaca \| [^]*experiment-truth:household-tiny:end/);
});
