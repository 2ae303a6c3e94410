import { runEstimateCli } from '../src/cli/estimate';
import { getMethod } from '../src/registry/registry';
import { KEY_BATCH } from './support/key-fixture';

/** The `estimate` command in-process, with stdin/stdout/stderr captured. */
async function cli(argv: string[], stdin = JSON.stringify(KEY_BATCH)) {
  let stdout = '';
  let stderr = '';
  const code = await runEstimateCli(argv, {
    readStdin: async () => stdin,
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
}

test('reads stdin, parses --param text by the schema, prints advantages/v1 with resolved params', async () => {
  const r = await cli([
    '--method',
    'gigpo',
    '--param',
    'gamma=0.9',
    '--param',
    'stepWeight=1',
    '--param',
    'normalize=mean',
  ]);
  expect(r.code).toBe(0);
  expect(r.stderr).toBe('');
  const out = JSON.parse(r.stdout);
  expect(out.format).toBe('advantages/v1');
  expect(out.params).toEqual({
    gamma: 0.9,
    stepWeight: 1,
    normalize: 'mean',
    episodeStats: 'trajectories',
    epsilon: 1e-6,
  });
  expect(out.groups[0].trajectories[0].advantages[0]).toBeCloseTo(1.405, 4);
  expect(out.groups[0].trajectories[2].diagnostics.singleton).toEqual([false, true]);
});

test('--timing adds exactly one line to stderr with the three phases', async () => {
  const r = await cli(['--method', 'grpo', '--timing', '--no-diagnostics']);
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(
    /^timing: read\+parse [\d.]+ ms, columnar [\d.]+ ms, estimate [\d.]+ ms \(10 steps, grpo\)\n$/,
  );
  expect(JSON.parse(r.stdout).groups[0].trajectories[0].diagnostics).toBeUndefined();
});

test('--list prints every method with its parameters; --json as data', async () => {
  const text = await cli(['--list']);
  expect(text.code).toBe(0);
  for (const m of [
    'reinforce',
    'grpo',
    'rloo',
    'ppo-gae',
    'gigpo',
    'gaca',
    'gated-bepo',
    'gagpo',
    'bipace',
  ]) {
    expect(text.stdout).toContain(`${m} (v${getMethod(m).version})`);
  }
  expect(text.stdout).toContain(
    '--param similarityThreshold=… (default absent; a number in (0, 1))',
  );
  const json = JSON.parse((await cli(['--list', '--json'])).stdout);
  const gaca = json.find((m: { name: string }) => m.name === 'gaca');
  expect(gaca.requires).toEqual(['nll']);
  expect(gaca.params.find((p: { name: string }) => p.name === 'gamma').default).toBe(0.99);
});

test.each([
  [['--method', 'nope'], /unknown method "nope"; known methods: reinforce/],
  [
    ['--method', 'gigpo', '--param', 'gamma=high'],
    /parameter "gamma" of method "gigpo" must be a number in \[0, 1\], got "high"/,
  ],
  [['--method', 'gigpo', '--param', 'gamma'], /--param expects key=value/],
  [['--method', 'gigpo', '--param', 'gamma=2'], /must be a number in \[0, 1\], got 2/],
  [['--method', 'gaca', '--param', 'debiased=maybe'], /must be true or false, got "maybe"/],
  [['--frobnicate'], /Unknown option '--frobnicate'/],
  [[], /--method is required/],
  [
    ['--method', 'gigpo', '--input', '/nonexistent/batch.json'],
    /cannot read --input "\/nonexistent\/batch.json": ENOENT/,
  ],
])(
  'bad usage %j exits 2 with the reason on stderr and nothing on stdout',
  async (argv, pattern) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(pattern);
  },
);

test.each([
  ['not JSON', '{"format":', /input is not valid JSON/],
  ['wrong format', '{"format":"x","groups":[]}', /"format" must be "rollout-batch\/v1"/],
  [
    'missing field',
    JSON.stringify({
      format: 'rollout-batch/v1',
      groups: [{ id: 'g', trajectories: [{ id: 't', steps: [{ state: 's', action: 'a' }] }] }],
    }),
    /group "g", trajectory "t", step 0 .*"reward" must be a number \(missing\)/,
  ],
])(
  'bad batch (%s) exits 2 with the place on stderr and nothing on stdout',
  async (_name, stdin, pattern) => {
    const r = await cli(['--method', 'grpo'], stdin);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(pattern);
  },
);

test('a method missing its field exits 2', async () => {
  const batch = structuredClone(KEY_BATCH);
  delete batch.groups[0]!.trajectories[1]!.steps[0]!.embedding;
  const r = await cli(['--method', 'bipace'], JSON.stringify(batch));
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/trajectory "key\/t2", step 0 .*method "bipace" needs "embedding"/);
});
