import { validateEvent } from '@creditlab/events';
import { compactStep, float32Base64, rolloutEvents } from '../src';

test('vectors go out as base64 float32 and come back, validated, as the same float32 values', () => {
  const embedding = [0.1, -2.5, 3e-8, 1234.5678];
  const tokenLogprobs = new Float32Array([-0.25, -1.75]);
  const [event] = rolloutEvents(0, {
    groups: [
      {
        id: 'g',
        trajectories: [
          { id: 't', steps: [{ state: 's', action: 'a', reward: 1, embedding, tokenLogprobs }] },
        ],
      },
    ],
  });
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
