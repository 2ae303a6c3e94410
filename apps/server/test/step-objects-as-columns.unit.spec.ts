import { STEP_FIELDS, validateEvent } from '@creditlab/events';
import { seededRandom } from '@creditlab/random';
import { eventDigest, logBodiesOf } from '../src/rollouts/event-digest';
import { checkEvent, isIssue } from '../src/rollouts/prepare-event';
import { stepObjectsAsColumns, V1_FIELDS } from '../src/rollouts/step-objects-as-columns';
import { stepsAsColumns } from '../src/rollouts/steps-as-columns';

/**
 * The one-walk check of rollouts whose steps are objects against the general way it stands in for
 * (validateEvent, then stepsAsColumns, the body and the digest made of the objects): on valid
 * events it must give the very same event, log body and digest; on anything else, either decline
 * or give what the general way gives — never accept what the general way refuses.
 */
type Rand = () => number;

const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;

/** A float32 vector as the clients send it: numbers, or base64 of little-endian float32. */
function vector(rand: Rand, length: number): unknown {
  const values = Array.from({ length }, () => (rand() < 0.1 ? -0 : rand() * 4 - 2));
  return rand() < 0.5 ? values : Buffer.from(new Float32Array(values).buffer).toString('base64');
}

/** A valid rollouts.appended with steps as objects, every optional field on some steps, no field beyond v1. */
function validEvent(rand: Rand): Record<string, unknown> {
  const texts = ['room 1', 'go', 'look', 'é clé', '🙂 emoji', '', 'a "quoted"\ttab'];
  const dim = 1 + Math.floor(rand() * 4);
  const step = () => {
    const s: Record<string, unknown> = {
      state: pick(rand, texts),
      action: pick(rand, texts),
      reward: pick(rand, [0, 1, -0, rand() * 10 - 5, 1e308, -2.5e-300]),
    };
    if (rand() < 0.5) s.nll = rand();
    if (rand() < 0.5) s.value = rand() - 0.5;
    if (rand() < 0.3) s.nextValue = rand();
    if (rand() < 0.4) s.nextState = pick(rand, texts);
    if (rand() < 0.3) s.tokenLogprobs = vector(rand, Math.floor(rand() * 3));
    if (rand() < 0.4) s.embedding = vector(rand, rand() < 0.8 ? dim : dim + 1);
    // Keys in any order, as JSON may have them.
    return Object.fromEntries(Object.entries(s).sort(() => rand() - 0.5));
  };
  const hex = (k: number) =>
    Array.from({ length: k }, () => Math.floor(rand() * 16).toString(16)).join('');
  const id = `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
  return {
    id: rand() < 0.3 ? id.toUpperCase() : id,
    type: 'rollouts.appended',
    data: {
      iteration: Math.floor(rand() * 100),
      groups: Array.from({ length: Math.floor(rand() * 3) }, (_, g) => ({
        id: rand() < 0.2 ? 'ģ'.repeat(512) : `g${g}`,
        trajectories: Array.from({ length: Math.floor(rand() * 3) }, (_, t) => ({
          id: `g${g}/t${t}`,
          ...(rand() < 0.4 ? { outcome: pick(rand, ['success', 'failure', 'truncated']) } : {}),
          steps: Array.from({ length: Math.floor(rand() * 5) }, step),
        })),
      })),
    },
  };
}

/** Every place in `v` (a path of keys), for a mutation to land on. */
function places(v: unknown, path: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(path);
  if (Array.isArray(v)) v.forEach((x, i) => places(x, [...path, i], out));
  else if (typeof v === 'object' && v !== null)
    for (const [k, x] of Object.entries(v)) places(x, [...path, k], out);
  return out;
}

const ODD_VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  0.5,
  2 ** 31,
  1e39,
  '',
  'x',
  '\u0000',
  'a\ud800b',
  'ģ'.repeat(513),
  'a'.repeat(513),
  'success',
  'AAAA',
  'AAA=',
  '-_8=',
  [],
  [1, 'x'],
  [1e39],
  {},
  { state: 'x' },
];

/** `event` with one thing changed: a value replaced, a key removed, or a key added. */
function mutated(rand: Rand, event: Record<string, unknown>): unknown {
  const copy = JSON.parse(JSON.stringify(event)) as Record<string, unknown>;
  const path = pick(rand, places(copy));
  if (path.length === 0) return pick(rand, ODD_VALUES);
  const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], copy);
  const key = path.at(-1)!;
  const roll = rand();
  if (roll < 0.6) parent[key] = pick(rand, ODD_VALUES);
  else if (roll < 0.8 && !Array.isArray(parent)) delete parent[key];
  else if (!Array.isArray(parent)) parent[pick(rand, ['extra', 'outcome', 'columns', 'Id'])] = 1;
  else parent.push(pick(rand, ODD_VALUES));
  return copy;
}

/** What the server made of an event before the one-walk check: the general way, whole. */
function generalWay(value: unknown) {
  const result = validateEvent(value, 'client');
  if (!result.ok) return undefined;
  const { canonical, stored, held } = logBodiesOf(stepsAsColumns(result.event));
  return { event: held, body: stored, hash: eventDigest(result.event, canonical) };
}

/** The value as the server receives it: JSON text parsed. */
const received = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

test('valid events: the same event, log body and digest as the general way', () => {
  const rand = seededRandom(7);
  for (let k = 0; k < 400; k++) {
    const value = received(validEvent(rand));
    const fast = stepObjectsAsColumns(value);
    const general = generalWay(value);
    expect(general).toBeDefined();
    expect(fast).toEqual(general!.event);
    const checked = checkEvent(1, value, 'client');
    if (isIssue(checked)) throw new Error(checked.reason);
    expect(checked.body?.equals(general!.body!)).toBe(true);
    expect(checked.hash.equals(general!.hash)).toBe(true);
  }
});

test('broken or unusual events: declined, or exactly what the general way makes of them', () => {
  const rand = seededRandom(11);
  let declined = 0;
  let refused = 0;
  for (let k = 0; k < 4000; k++) {
    let value = mutated(rand, validEvent(rand));
    // Keys JSON.parse keeps but an object copy would not: `__proto__`.
    if (k % 50 === 0)
      value = JSON.parse(JSON.stringify(value).replace('"state":', '"__proto__":{"x":1},"state":'));
    const fast = stepObjectsAsColumns(value);
    const general = generalWay(value);
    if (!general) refused++;
    if (!fast) {
      declined++;
      continue;
    }
    expect(general).toBeDefined(); // never accepts what the general way refuses
    expect(fast).toEqual(general!.event);
  }
  // The mutations do break events, and the check does decline them.
  expect(refused).toBeGreaterThan(2000);
  expect(declined).toBeGreaterThanOrEqual(refused);
});

test('steps with fields beyond v1, and other events, go the general way', () => {
  // Its own list of v1's fields is the schema's: a name in one only would be dropped or refused.
  expect(new Set(V1_FIELDS)).toEqual(new Set(STEP_FIELDS));
  const rand = seededRandom(3);
  const event = validEvent(rand) as { data: { groups: { trajectories: { steps: object[] }[] }[] } };
  event.data.groups = [
    {
      id: 'g',
      trajectories: [{ id: 't', steps: [{ state: 's', action: 'a', reward: 1, seed: 7 }] }],
    },
  ] as never;
  expect(stepObjectsAsColumns(received(event))).toBeUndefined();
  expect(generalWay(received(event))).toBeDefined();
  const finished = {
    id: '6f1d0c52-0c3e-4c55-9d7b-0d2b8f2f8a12',
    type: 'trajectory.finished',
    data: { iteration: 0, groupId: 'g', trajectoryId: 't', outcome: 'success' },
  };
  expect(stepObjectsAsColumns(finished)).toBeUndefined();
});
