import {
  columnarBatchFromJson,
  estimate,
  EstimatorInputError,
  parseJsonText,
  type RolloutBatch,
} from '../src';
import { KEY_BATCH } from './support/key-fixture';

/**
 * Every rejection case of docs/rollout-batch.md: the batch is refused as a whole
 * with a message that says what is wrong and where (group id, trajectory id,
 * step index, JSON path).
 */
type Mutation = (b: any) => void;

const cases: [string, Mutation, string[]][] = [
  [
    'wrong format',
    (b) => (b.format = 'rollout-batch/v2'),
    ['"format" must be "rollout-batch/v1"', 'v2'],
  ],
  ['groups not an array', (b) => (b.groups = {}), ['"groups" must be an array']],
  ['no groups', (b) => (b.groups = []), ['batch has no groups']],
  [
    'group id missing',
    (b) => delete b.groups[0].id,
    ['groups[0].id', '"id" must be a string (missing)'],
  ],
  [
    'duplicate group id',
    (b) => b.groups.push(structuredClone(b.groups[0])),
    ['duplicate group id "key"', 'groups[1].id'],
  ],
  [
    'group without trajectories',
    (b) => (b.groups[0].trajectories = []),
    ['group "key"', 'group has no trajectories'],
  ],
  [
    'trajectory id missing',
    (b) => delete b.groups[0].trajectories[1].id,
    ['group "key"', 'groups[0].trajectories[1].id'],
  ],
  [
    'duplicate trajectory id',
    (b) => (b.groups[0].trajectories[2].id = 'key/t1'),
    ['group "key"', 'duplicate trajectory id "key/t1"', 'groups[0].trajectories[2].id'],
  ],
  [
    'trajectory without steps',
    (b) => (b.groups[0].trajectories[3].steps = []),
    ['trajectory "key/t4"', 'trajectory has no steps'],
  ],
  [
    'unknown outcome',
    (b) => (b.groups[0].trajectories[0].outcome = 'won'),
    ['trajectory "key/t1"', '"outcome" must be one of'],
  ],
  [
    'state missing',
    (b) => delete b.groups[0].trajectories[1].steps[2].state,
    [
      'group "key", trajectory "key/t2", step 2',
      'steps[2].state',
      '"state" must be a string (missing)',
    ],
  ],
  [
    'action not a string',
    (b) => (b.groups[0].trajectories[0].steps[1].action = 3),
    ['trajectory "key/t1", step 1', '"action" must be a string'],
  ],
  [
    'reward missing',
    (b) => delete b.groups[0].trajectories[2].steps[0].reward,
    ['trajectory "key/t3", step 0', '"reward" must be a number (missing)'],
  ],
  [
    'non-finite reward',
    (b) => (b.groups[0].trajectories[2].steps[1].reward = Infinity),
    ['trajectory "key/t3", step 1', '"reward" must be a finite number, got Infinity'],
  ],
  [
    'NaN value',
    (b) => (b.groups[0].trajectories[0].steps[0].value = NaN),
    ['trajectory "key/t1", step 0', '"value" must be a finite number, got NaN'],
  ],
  [
    'non-finite token log-prob',
    (b) => (b.groups[0].trajectories[0].steps[0].tokenLogprobs = [-0.1, -Infinity]),
    ['step 0', '"tokenLogprobs[1]" must be a finite number'],
  ],
  [
    'embedding of another length',
    (b) => (b.groups[0].trajectories[3].steps[1].embedding = [1, 0]),
    [
      'trajectory "key/t4", step 1',
      'embedding has 2 dimensions, but earlier steps of this batch have 3',
    ],
  ],
  [
    'embedding with a string',
    (b) => (b.groups[0].trajectories[1].steps[0].embedding = [1, 'x', 0]),
    ['trajectory "key/t2", step 0', '"embedding[1]" must be a finite number, got "x"'],
  ],
  [
    'null optional field',
    (b) => (b.groups[0].trajectories[1].steps[1].nll = null),
    ['trajectory "key/t2", step 1', '"nll" is null; leave an optional field out instead'],
  ],
  [
    'step not an object',
    (b) => (b.groups[0].trajectories[0].steps[2] = 5),
    ['step 2', 'a step must be a JSON object'],
  ],
];

test.each(cases)('%s', (_name, mutate, fragments) => {
  const batch = structuredClone(KEY_BATCH) as any;
  mutate(batch);
  let error: unknown;
  try {
    columnarBatchFromJson(batch);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(EstimatorInputError);
  expect((error as EstimatorInputError).code).toBe('INVALID_BATCH');
  for (const f of fragments) expect((error as Error).message).toContain(f);
});

test('text that is not JSON', () => {
  expect(() => parseJsonText('{"format": "rollout-batch/v1", ')).toThrow(/input is not valid JSON/);
  expect(parseJsonText('{"x": 1e999}')).toEqual({ x: Infinity }); // and the builder rejects it:
  const batch = structuredClone(KEY_BATCH) as any;
  batch.groups[0].trajectories[0].steps[0].reward = parseJsonText('1e999');
  expect(() => columnarBatchFromJson(batch)).toThrow(
    /"reward" must be a finite number, got Infinity/,
  );
});

describe('a method that needs a field the batch lacks names method, field and first step', () => {
  const without = (
    field: 'nll' | 'embedding' | 'value',
    traj: number,
    step: number,
  ): RolloutBatch => {
    const b = structuredClone(KEY_BATCH);
    delete b.groups[0]!.trajectories[traj]!.steps[step]![field];
    return b;
  };
  test.each([
    [
      'gaca',
      'nll',
      2,
      1,
      /trajectory "key\/t3", step 1.*method "gaca" needs "nll" \(or "tokenLogprobs"\)/,
    ],
    [
      'bipace',
      'embedding',
      1,
      2,
      /trajectory "key\/t2", step 2.*method "bipace" needs "embedding"/,
    ],
    ['ppo-gae', 'value', 0, 0, /trajectory "key\/t1", step 0.*method "ppo-gae" needs "value"/],
  ] as const)('%s without %s', (method, field, traj, step, pattern) => {
    const batch = columnarBatchFromJson(without(field, traj, step));
    expect(() => estimate(batch, method)).toThrow(pattern);
    // Methods that do not need the field still run.
    expect(estimate(batch, 'gigpo').advantages).toHaveLength(10);
  });

  test('tokenLogprobs stand in for nll; an empty list is a zero-token step, not a missing field', () => {
    const b = without('nll', 0, 1);
    b.groups[0]!.trajectories[0]!.steps[1]!.tokenLogprobs = [-1, -1.2];
    const b2 = without('nll', 0, 2);
    b2.groups[0]!.trajectories[0]!.steps[2]!.tokenLogprobs = [];
    expect(columnarBatchFromJson(b).nll[1]).toBeCloseTo(1.1, 12);
    expect(estimate(columnarBatchFromJson(b2), 'gaca').diagnostics.criticality![2]).toBe(
      1 / ((0.8 / 0.95 + 1.1 / 0.95 + 1) / 3),
    );
  });
});

describe('methods and parameters', () => {
  const batch = columnarBatchFromJson(KEY_BATCH);
  const rejects = (
    method: string,
    params: Record<string, unknown>,
    code: string,
    pattern: RegExp,
  ) => {
    let error: unknown;
    try {
      estimate(batch, method, params);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EstimatorInputError);
    expect((error as EstimatorInputError).code).toBe(code);
    expect((error as Error).message).toMatch(pattern);
  };

  test('unknown method lists the known ones', () =>
    rejects(
      'gipgo',
      {},
      'UNKNOWN_METHOD',
      /unknown method "gipgo"; known methods: reinforce, grpo, rloo, ppo-gae, gigpo, gaca, gated-bepo, gagpo, bipace/,
    ));
  test('unknown parameter lists the valid ones', () =>
    rejects(
      'gigpo',
      { gama: 0.9 },
      'UNKNOWN_PARAMETER',
      /unknown parameter "gama" for method "gigpo"; valid parameters: gamma, stepWeight, normalize, episodeStats, epsilon, similarityThreshold/,
    ));
  test('out of range', () =>
    rejects(
      'gigpo',
      { gamma: 1.5 },
      'INVALID_PARAMETER',
      /parameter "gamma" of method "gigpo" must be a number in \[0, 1\], got 1.5/,
    ));
  test('an advantage beyond float32 (what the server and the trainer keep): refused, naming the step', () =>
    rejects(
      'gigpo',
      { stepWeight: 1e39 },
      'NON_FINITE_RESULT',
      /: method "gigpo" gives this step an advantage beyond float32's range \(-?[\d.]+e\+\d+\)/,
    ));
  test('finite rewards whose arithmetic overflows: refused, naming the step', () => {
    // Two rewards of 1e308 in one trajectory: their undiscounted return is beyond float64.
    const huge = columnarBatchFromJson({
      format: 'rollout-batch/v1',
      groups: [
        {
          id: 'g',
          trajectories: [
            { id: 't0', steps: [0, 1].map(() => ({ state: 's', action: 'a', reward: 1e308 })) },
            { id: 't1', steps: [{ state: 's', action: 'a', reward: 0 }] },
          ],
        },
      ],
    });
    expect(() => estimate(huge, 'reinforce')).toThrow(
      expect.objectContaining({
        code: 'NON_FINITE_RESULT',
        message: expect.stringMatching(
          /trajectory "t0", step 0 .*: method "reinforce" gives this step a non-finite advantage \(Infinity\)/,
        ),
      }),
    );
  });
  test('parameters that are not an object of names and values', () => {
    for (const [given, got] of [
      [5, '5'],
      ['x', '"x"'],
      [[0.9], '[0.9]'],
      [null, 'null'],
    ] as const)
      rejects(
        'gigpo',
        given as unknown as Record<string, unknown>,
        'INVALID_PARAMETER',
        new RegExp(
          `^the parameters of method "gigpo" must be an object of names and values, e\\.g\\. \\{"gamma": [\\d.]+\\}, got ${got.replace(/[[\].]/g, '\\$&')}$`,
        ),
      );
  });
  test('a number JSON cannot say is shown as it was written', () =>
    rejects('gigpo', { gamma: Infinity }, 'INVALID_PARAMETER', /got Infinity$/));
  test('open interval', () =>
    rejects(
      'gigpo',
      { similarityThreshold: 1 },
      'INVALID_PARAMETER',
      /must be a number in \(0, 1\), got 1/,
    ));
  test('wrong type', () =>
    rejects(
      'gaca',
      { debiased: 'yes' },
      'INVALID_PARAMETER',
      /parameter "debiased" of method "gaca" must be true or false, got "yes"/,
    ));
  test('enum', () =>
    rejects(
      'grpo',
      { normalize: 'std' },
      'INVALID_PARAMETER',
      /must be one of "mean-std", "mean", got "std"/,
    ));
  test('integer', () =>
    rejects(
      'gated-bepo',
      { fixedPointMaxIter: 2.5 },
      'INVALID_PARAMETER',
      /must be an integer ≥ 1, got 2.5/,
    ));
  test('strictly positive', () =>
    rejects(
      'grpo',
      { epsilon: 0 },
      'INVALID_PARAMETER',
      /"epsilon" of method "grpo" must be a number > 0, got 0/,
    ));

  test('the output echoes every resolved parameter in registry order; an explicit default is the same set', () => {
    const r = estimate(batch, 'gigpo', { stepWeight: 1, gamma: 0.9 });
    expect(r.params).toEqual({
      gamma: 0.9,
      stepWeight: 1,
      normalize: 'mean-std',
      episodeStats: 'trajectories',
      epsilon: 1e-6,
    });
    expect(Object.keys(r.params)).toEqual([
      'gamma',
      'stepWeight',
      'normalize',
      'episodeStats',
      'epsilon',
    ]);
  });
});
