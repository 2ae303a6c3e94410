import { validateEvent } from '@creditlab/events';
import { columnarByDefault, compactStep, float32Base64, rolloutEvents } from '../src';
import type { StepColumns } from '@creditlab/events';

test('vectors go out as base64 float32 and come back, validated, as the same float32 values', () => {
  const embedding = [0.1, -2.5, 3e-8, 1234.5678];
  const tokenLogprobs = new Float32Array([-0.25, -1.75]);
  const [event] = rolloutEvents(
    0,
    {
      groups: [
        {
          id: 'g',
          trajectories: [
            { id: 't', steps: [{ state: 's', action: 'a', reward: 1, embedding, tokenLogprobs }] },
          ],
        },
      ],
    },
    2000,
    { columnar: false },
  );
  const step = (event!.data as { groups: { trajectories: { steps: object[] }[] }[] }).groups[0]!
    .trajectories[0]!.steps[0] as Record<string, unknown>;
  expect(typeof step.embedding).toBe('string');
  expect(typeof step.tokenLogprobs).toBe('string');
  // 4 bytes per value, base64: 4 values → 24 characters, far fewer than the JSON numbers.
  expect((step.embedding as string).length).toBe(24);

  const valid = validateEvent(JSON.parse(JSON.stringify(event)));
  if (!valid.ok) throw new Error(valid.issue.message);
  const back = (
    valid.event.data as {
      groups: {
        trajectories: { steps: { embedding: Float32Array; tokenLogprobs: Float32Array }[] }[];
      }[];
    }
  ).groups[0]!.trajectories[0]!.steps[0]!;
  expect(Array.from(back.embedding)).toEqual(Array.from(Float32Array.from(embedding)));
  expect(Array.from(back.tokenLogprobs)).toEqual(Array.from(tokenLogprobs));
});

test('a step without vectors is passed through untouched; a string vector is left as sent', () => {
  const plain = { state: 's', action: 'a', reward: 0 };
  expect(compactStep(plain)).toBe(plain);
  const sent = { ...plain, embedding: float32Base64([1, 2]) };
  expect(compactStep(sent)).toEqual(sent);
});

test('a group or trajectory field rollout-batch/v1 does not define is refused, not dropped', () => {
  const steps = [{ state: 's', action: 'a', reward: 1 }];
  // A batch read from JSON: its types are not checked by the compiler.
  const batch = (trajectory: object, group: object = {}) =>
    JSON.parse(
      JSON.stringify({
        groups: [{ id: 'g', ...group, trajectories: [{ id: 't', steps, ...trajectory }] }],
      }),
    ) as Parameters<typeof rolloutEvents>[1];
  expect(() => rolloutEvents(0, batch({ reward: 1 }))).toThrow(
    new TypeError('groups[0].trajectories[0].reward: unknown field; known: id, outcome, steps'),
  );
  expect(() => rolloutEvents(0, batch({}, { task: 'x' }), 2000, { columnar: true })).toThrow(
    new TypeError('groups[0].task: unknown field; known: id, trajectories'),
  );
  const [event] = rolloutEvents(0, batch({ outcome: 'success' }));
  expect(validateEvent(JSON.parse(JSON.stringify(event))).ok).toBe(true);
});

/** One trajectory's steps as a batch. */
const oneTrajectory = (steps: object[]) => ({
  groups: [{ id: 'g', trajectories: [{ id: 't', outcome: 'success', steps }] }],
});

test('steps go as columns unless columnar is false; both forms validate to the same steps', () => {
  const steps = [
    { state: 's0', action: 'a', reward: 0, nll: 0.5, embedding: [1, 2], tokenLogprobs: [-0.5] },
    { state: 's1', action: 'b', reward: 1, value: 0.25, nextState: 's0', embedding: [3, 4] },
    { state: 's0', action: 'b', reward: -2, nextValue: 0.75, embedding: new Float32Array([5, 6]) },
  ];
  const [columns] = rolloutEvents(3, oneTrajectory(steps));
  const [rows] = rolloutEvents(3, oneTrajectory(steps), 2000, { columnar: false });
  expect(Object.keys(columns!.data)).toEqual(['iteration', 'groups', 'columns']);
  expect(Object.keys(rows!.data)).toEqual(['iteration', 'groups']);
  const valid = (event: object) => {
    const checked = validateEvent(JSON.parse(JSON.stringify(event)));
    if (!checked.ok) throw new Error(checked.issue.message);
    return checked.event.data as unknown as {
      groups: { trajectories: { steps: Record<string, unknown>[] }[] }[];
      columns: StepColumns;
    };
  };
  // Every field of every step, from the columns, as the row form gives it.
  const c = valid(columns!).columns;
  const fromColumns = Array.from({ length: c.n }, (_, i) => {
    const step: Record<string, unknown> = {
      state: c.texts[c.state[i]!],
      action: c.texts[c.action[i]!],
      reward: c.reward[i],
    };
    for (const name of ['nll', 'value', 'nextValue'] as const)
      if (c[name] && !Number.isNaN(c[name][i])) step[name] = c[name][i];
    if (c.nextState && c.nextState[i]! >= 0) step.nextState = c.texts[c.nextState[i]!];
    for (const name of ['tokenLogprobs', 'embedding'] as const)
      if (c[name]?.[i]) step[name] = Array.from(c[name][i]!);
    return step;
  });
  const fromRows = valid(rows!).groups[0]!.trajectories[0]!.steps.map((s) =>
    Object.fromEntries(
      Object.entries(s).map(([k, v]) => [k, v instanceof Float32Array ? Array.from(v) : v]),
    ),
  );
  expect(fromColumns).toEqual(fromRows);
  expect(fromRows).toHaveLength(3);
});

test('a step the columns would not carry as it is goes as objects, and is refused naming the step', () => {
  const good = { state: 's', action: 'a', reward: 0 };
  // Each would be changed by the columns (a null NLL stored as 0) or refused under a column's path.
  const bad: [object, string][] = [
    [{ ...good, nll: null }, 'nll'],
    [{ ...good, reward: '1' }, 'reward'],
    [{ ...good, value: Number.NaN }, 'value'],
    [{ ...good, state: 7 }, 'state'],
    [{ ...good, nextState: 3 }, 'nextState'],
    [{ ...good, embedding: 5 }, 'embedding'],
  ];
  for (const [step, field] of bad) {
    const [event] = rolloutEvents(0, oneTrajectory([good, step]), 2000, { columnar: true });
    expect(Object.keys(event!.data)).toEqual(['iteration', 'groups']);
    const valid = validateEvent(JSON.parse(JSON.stringify(event)));
    expect(valid.ok ? undefined : valid.issue.path).toBe(
      `data.groups[0].trajectories[0].steps[1].${field}`,
    );
  }
  // Fields beyond v1 go in the extra column, as sent.
  const [extra] = rolloutEvents(
    0,
    oneTrajectory([good, { ...good, note: 'kept', n: [1, { a: 2 }] }]),
  );
  const columns = (extra!.data as { columns: { extra?: unknown } }).columns;
  expect(columns.extra).toEqual([null, { note: 'kept', n: [1, { a: 2 }] }]);
  const valid = validateEvent(JSON.parse(JSON.stringify(extra)));
  expect(valid.ok && 'columns' in valid.event.data && valid.event.data.columns.extra).toEqual([
    null,
    '{"n":[1,{"a":2}],"note":"kept"}',
  ]);
});

test('CREDITLAB_COLUMNAR_STEPS=0 makes objects the default, as for the Python client', () => {
  expect(columnarByDefault({})).toBe(true);
  expect(columnarByDefault({ CREDITLAB_COLUMNAR_STEPS: '1' })).toBe(true);
  expect(columnarByDefault({ CREDITLAB_COLUMNAR_STEPS: '0' })).toBe(false);
  const batch = oneTrajectory([{ state: 's', action: 'a', reward: 1 }]);
  const before = process.env.CREDITLAB_COLUMNAR_STEPS;
  process.env.CREDITLAB_COLUMNAR_STEPS = '0';
  try {
    expect(Object.keys(rolloutEvents(0, batch)[0]!.data)).toEqual(['iteration', 'groups']);
    expect(Object.keys(rolloutEvents(0, batch, 2000, { columnar: true })[0]!.data)).toContain(
      'columns',
    );
  } finally {
    if (before === undefined) delete process.env.CREDITLAB_COLUMNAR_STEPS;
    else process.env.CREDITLAB_COLUMNAR_STEPS = before;
  }
});

test('extra fields may nest as deep as columns as they may as objects, and no deeper', () => {
  const nested = (levels: number) => {
    let v: unknown = 1;
    for (let i = 0; i < levels; i++) v = [v];
    return v;
  };
  for (const levels of [56, 57]) {
    const batch = oneTrajectory([{ state: 's', action: 'a', reward: 1, deep: nested(levels) }]);
    const [rows] = rolloutEvents(0, batch, 2000, { columnar: false });
    const [columns] = rolloutEvents(0, batch, 2000, { columnar: true });
    const ok = (e: unknown) => validateEvent(JSON.parse(JSON.stringify(e))).ok;
    expect([ok(rows), ok(columns)]).toEqual([levels === 56, levels === 56]);
  }
});
