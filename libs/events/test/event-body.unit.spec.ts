import { canonicalJson, eventBodyHash, findUnstorable, formatPath, validateEvent } from '../src';

describe('canonicalJson', () => {
  test('sorts keys at every level, writes typed arrays as numbers, drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    expect(canonicalJson(new Float32Array([0.5, -2]))).toBe('[0.5,-2]');
    expect(canonicalJson([Infinity, null])).toBe('[null,null]');
  });

  test('writes what sorting every level would, for values in order already and not (random)', () => {
    // The definition, written plainly: canonicalJson may take a shorter way, never to other text.
    const sorted = (v: unknown): string => {
      if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
      if (ArrayBuffer.isView(v)) return JSON.stringify(Array.from(v as Float32Array));
      if (Array.isArray(v))
        return `[${v.map((x) => (x === undefined ? 'null' : sorted(x))).join(',')}]`;
      const r = v as Record<string, unknown>;
      const parts = Object.keys(r)
        .sort()
        .filter((k) => r[k] !== undefined && typeof r[k] !== 'function')
        .map((k) => `${JSON.stringify(k)}:${sorted(r[k])}`);
      return `{${parts.join(',')}}`;
    };
    let seed = 5;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const KEYS = ['a', 'b', 'B', 'é', '', '2', '10', 'toJSON', 'a b', '\ud800', 'z"q'];
    const leaves: (() => unknown)[] = [
      () => random(1000) / 7,
      () => -0,
      () => NaN,
      () => 1e21,
      () => null,
      () => random(2) === 0,
      () => ['x', 'line\nbreak', '\u2028', '\udc00 lone', 'é😀'][random(5)],
      () => undefined,
      () => new Float32Array([random(9) / 4, -1]),
      () => new Date(0),
      () => () => 1,
    ];
    const value = (depth: number): unknown => {
      const kind = depth > 3 ? 0 : random(4);
      if (kind === 0)
        return (leaves[random(random(3) === 0 ? leaves.length : 7)] as () => unknown)();
      if (kind === 1) return Array.from({ length: random(4) }, () => value(depth + 1));
      const keys = [
        ...new Set(Array.from({ length: random(5) }, () => KEYS[random(KEYS.length)] as string)),
      ];
      if (kind === 2) keys.sort(); // in order already: the short way, when the rest is plain
      const o: Record<string, unknown> = random(8) === 0 ? Object.create(null) : {};
      for (const k of keys) o[k] = value(depth + 1);
      return o;
    };
    for (let k = 0; k < 3000; k++) {
      const v = value(0);
      expect(canonicalJson(v)).toBe(sorted(v));
    }
  });

  test('the hash tells a retry from a reused id: key order and vector encoding do not count', () => {
    const json = validateEvent({
      id: '00000000-0000-4000-8000-000000000001',
      type: 'steps.appended',
      data: {
        iteration: 0,
        groupId: 'g',
        trajectoryId: 't',
        firstStepIndex: 0,
        steps: [{ state: 's', action: 'a', reward: 1, embedding: [0.1, 0.2] }],
      },
    });
    const compact = validateEvent({
      data: {
        steps: [
          {
            embedding: Buffer.from(new Float32Array([0.1, 0.2]).buffer).toString('base64'),
            reward: 1,
            action: 'a',
            state: 's',
          },
        ],
        firstStepIndex: 0,
        trajectoryId: 't',
        groupId: 'g',
        iteration: 0,
      },
      type: 'steps.appended',
      id: '00000000-0000-4000-8000-000000000001',
    });
    if (!json.ok || !compact.ok) throw new Error('both are valid');
    const hash = (e: typeof json.event) => eventBodyHash(e.type, e.data).toString('hex');
    expect(hash(compact.event)).toBe(hash(json.event));
    const other = {
      ...json.event,
      data: { ...json.event.data, iteration: 1 },
    } as typeof json.event;
    expect(hash(other)).not.toBe(hash(json.event));
  });
});

describe('findUnstorable', () => {
  test('finds NUL and lone surrogates in values and keys, with their path', () => {
    expect(findUnstorable({ a: [1, { b: 'x\u0000' }] })).toEqual({
      path: ['a', 1, 'b'],
      message: 'must not contain the NUL character (\\u0000)',
    });
    expect(findUnstorable({ ['k\ud800']: 1 })?.path).toEqual(['k\ud800']);
    expect(findUnstorable({ ok: 'a pair 😀 is fine' })).toBeUndefined();
  });

  test('refuses a key named __proto__ (as JSON.parse gives it), which a copy of the object would lose', () => {
    const metrics = JSON.parse(
      '{"id":"2f4e6d8c-0b1a-4c3e-8f5d-7a9b1c3e5f04","type":"metrics.logged","data":{"iteration":0,"metrics":{"loss":1,"__proto__":{"x":"not a number"}}}}',
    ) as unknown;
    expect(findUnstorable(metrics)).toEqual({
      path: ['data', 'metrics', '__proto__'],
      message: 'key must not be "__proto__" (a JavaScript object cannot hold it as a field)',
    });
    const refused = validateEvent(metrics, 'client');
    expect(refused.ok).toBe(false);
    expect(JSON.stringify(refused)).toContain('data.metrics.__proto__');
    // A key that merely contains the word is a key like any other.
    expect(findUnstorable(JSON.parse('{"my__proto__":1,"proto":2}'))).toBeUndefined();
  });

  test('refuses nesting past the limit, and only past it', () => {
    const nest = (n: number): unknown => (n === 0 ? 1 : [nest(n - 1)]);
    expect(findUnstorable(nest(64))).toBeUndefined();
    expect(findUnstorable(nest(65))?.message).toBe('nested deeper than 64 levels');
  });
});

describe('validateEvent: unknown keys', () => {
  test('a columnar event with a key its form does not have is refused at that key', () => {
    const columnar = (trajectory: Record<string, unknown>) =>
      validateEvent({
        id: '00000000-0000-4000-8000-000000000002',
        type: 'rollouts.appended',
        data: {
          iteration: 0,
          groups: [{ id: 'g', trajectories: [{ id: 't', stepCount: 1, ...trajectory }] }],
          columns: {
            texts: ['s', 'a'],
            state: [0],
            action: [1],
            reward: Buffer.from(new Float64Array([1]).buffer).toString('base64'),
          },
        },
      });
    expect(columnar({}).ok).toBe(true);
    expect(columnar({ steps: 1 })).toEqual({
      ok: false,
      issue: { path: 'data.groups[0].trajectories[0].steps', message: 'unknown field' },
    });
    expect(columnar({ steps: 1, stepcount: 1 })).toEqual({
      ok: false,
      issue: {
        path: 'data.groups[0].trajectories[0].steps',
        message: 'unknown fields "steps", "stepcount"',
      },
    });
  });

  // A misspelt optional field used to be dropped without a word (the checkpoint's "sha", the
  // run's "sumary"): the event was stored without what its sender meant to say.
  const event = (type: string, data: unknown, extra: Record<string, unknown> = {}) =>
    validateEvent({ id: '00000000-0000-4000-8000-000000000003', type, data, ...extra });
  const rows = (trajectory: Record<string, unknown>, group: Record<string, unknown> = {}) => ({
    iteration: 0,
    groups: [
      {
        id: 'g',
        ...group,
        trajectories: [{ id: 't', steps: [{ state: 's', action: 'a', reward: 1 }], ...trajectory }],
      },
    ],
  });

  test.each([
    ['the envelope', event('run.resumed', {}, { timestamp: 1 }), 'timestamp'],
    [
      'a trajectory',
      event('rollouts.appended', rows({ reward: 1 })),
      'data.groups[0].trajectories[0].reward',
    ],
    ['a group', event('rollouts.appended', rows({}, { task: 'x' })), 'data.groups[0].task'],
    ['rollouts.appended', event('rollouts.appended', { ...rows({}), step: 3 }), 'data.step'],
    [
      'steps.appended',
      event('steps.appended', {
        iteration: 0,
        groupId: 'g',
        trajectoryId: 't',
        firstStepIndex: 0,
        steps: [{ state: 's', action: 'a', reward: 0 }],
        done: true,
      }),
      'data.done',
    ],
    [
      'trajectory.finished',
      event('trajectory.finished', {
        iteration: 0,
        groupId: 'g',
        trajectoryId: 't',
        outcome: 'success',
        reward: 1,
      }),
      'data.reward',
    ],
    [
      'advantages.used',
      event('advantages.used', { iteration: 0, method: 'grpo', params: {}, setId: 'x' }),
      'data.setId',
    ],
    [
      'metrics.logged',
      event('metrics.logged', { iteration: 0, metrics: {}, step: 1 }),
      'data.step',
    ],
    [
      'evaluation.logged',
      event('evaluation.logged', { iteration: 0, successRate: 0.5, success_rate: 0.5 }),
      'data.success_rate',
    ],
    [
      'checkpoint.saved',
      event('checkpoint.saved', { iteration: 0, uri: 's3://b/k', sha: 'ab' }),
      'data.sha',
    ],
    [
      'run.finished',
      event('run.finished', { status: 'completed', sumary: { loss: 1 } }),
      'data.sumary',
    ],
    ['run.resumed', event('run.resumed', { why: 'x' }), 'data.why'],
  ])('a field %s does not define is refused at that field', (_what, result, path) => {
    expect(result).toEqual({ ok: false, issue: { path, message: 'unknown field' } });
  });

  test('a step keeps fields beyond rollout-batch/v1, and an evaluation task its own', () => {
    const step = { state: 's', action: 'a', reward: 1, turn: 2 };
    const withExtra = event('rollouts.appended', {
      iteration: 0,
      groups: [{ id: 'g', trajectories: [{ id: 't', steps: [step] }] }],
    });
    expect(withExtra.ok && withExtra.event.type === 'rollouts.appended').toBe(true);
    const stored = withExtra.ok ? JSON.stringify(withExtra.event.data) : '';
    expect(stored).toContain('"turn":2');
    const evaluation = event('evaluation.logged', {
      iteration: 0,
      successRate: 1,
      tasks: [{ task: 'a', success: true, seed: 7 }],
    });
    expect(evaluation.ok ? JSON.stringify(evaluation.event.data) : '').toContain('"seed":7');
  });
});

describe('formatPath', () => {
  test('quotes keys that are not plain names, so that they cannot read as nesting', () => {
    expect(formatPath(['data', 'groups', 0, 'steps', 2, 'reward'])).toBe(
      'data.groups[0].steps[2].reward',
    );
    expect(formatPath(['data', 'metrics', 'train/loss'])).toBe('data.metrics["train/loss"]');
    expect(formatPath(['data', 'a.b'])).toBe('data["a.b"]');
    expect(formatPath(['steps[0]'])).toBe('["steps[0]"]');
    expect(formatPath([''])).toBe('[""]');
  });
});

describe('a key too long or empty', () => {
  const metrics = (name: string) =>
    validateEvent(
      {
        id: '00000000-0000-4000-8000-000000000001',
        type: 'metrics.logged',
        data: { iteration: 0, metrics: { [name]: 1 } },
      },
      'client',
    );

  test('is refused saying why, shown by its start and length rather than echoed whole', () => {
    const long = `${'loss/'.repeat(20)}${'é'.repeat(500)}`; // 600 characters
    const r = metrics(long);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issue.message).toBe('key has 600 characters; at most 512');
    expect(r.issue.path).toBe(
      `data.metrics[${JSON.stringify(`${long.slice(0, 64)}…`)} (600 characters)]`,
    );
    expect(metrics('')).toMatchObject({
      ok: false,
      issue: { path: 'data.metrics[""]', message: 'key must not be empty' },
    });
  });

  test('counts characters, not UTF-16 units: 512 emoji pass, 513 do not, and none is cut in half', () => {
    expect(metrics('😀'.repeat(512)).ok).toBe(true);
    const r = metrics('😀'.repeat(513));
    expect(r).toMatchObject({
      ok: false,
      issue: { message: 'key has 513 characters; at most 512' },
    });
    expect(formatPath(['m', '😀'.repeat(513)])).toBe(
      `m[${JSON.stringify(`${'😀'.repeat(64)}…`)} (513 characters)]`,
    );
    expect(formatPath(['m', 'x'.repeat(64)])).toBe(`m.${'x'.repeat(64)}`);
  });
});
