import { pick, seededRandom, shuffle } from '@creditlab/random';

export type TaskType = 'pick_and_place' | 'clean' | 'heat' | 'cool' | 'examine' | 'pick_two';
export type ReceptacleKind =
  'countertop' | 'cabinet' | 'shelf' | 'table' | 'sinkbasin' | 'microwave' | 'fridge' | 'desklamp';

export interface Receptacle {
  name: string; // e.g. "cabinet 2"
  kind: ReceptacleKind;
  room: string;
}

export interface HouseObject {
  name: string; // e.g. "apple 1"
  kind: string; // e.g. "apple"
}

/** One task instance: the house, where things start, what to achieve, the step cap. */
export interface HouseholdTask {
  seed: number;
  size: HouseholdSizeName;
  type: TaskType;
  receptacles: Receptacle[];
  objects: HouseObject[];
  /** Receptacle index where each object starts. */
  start: number[];
  /** Object kind to act on, and the receptacle to put it in (unused by `examine`). */
  objectKind: string;
  target: number;
  maxSteps: number;
  description: string;
}

export interface HouseholdSize {
  rooms: string[];
  /** Plain receptacles per room (countertops, cabinets, shelves, tables). */
  plainPerRoom: number;
  /** Distinct object kinds, and copies of each. */
  objectKinds: number;
  copies: number;
  maxSteps: number;
}

/** From tiny (a few rooms, tasks of 3–6 steps, exactly solvable) to larger houses. */
export const HOUSEHOLD_SIZES = {
  tiny: { rooms: ['kitchen'], plainPerRoom: 2, objectKinds: 2, copies: 1, maxSteps: 15 },
  small: {
    rooms: ['kitchen', 'livingroom'],
    plainPerRoom: 2,
    objectKinds: 3,
    copies: 2,
    maxSteps: 15,
  },
  medium: {
    rooms: ['kitchen', 'livingroom', 'bedroom'],
    plainPerRoom: 3,
    objectKinds: 4,
    copies: 2,
    maxSteps: 30,
  },
} satisfies Record<string, HouseholdSize>;
export type HouseholdSizeName = keyof typeof HOUSEHOLD_SIZES;

const OBJECT_KINDS = ['apple', 'mug', 'potato', 'book', 'cup', 'egg'];
const PLAIN: ReceptacleKind[] = ['countertop', 'cabinet', 'shelf', 'table'];

/**
 * The task of `seed` in a house of `size`: a deterministic function of both,
 * so that every rollout of a group starts from the same world. The types rotate
 * with the seed; the kitchen has the appliances each type needs.
 */
export function householdTask(
  seed: number,
  sizeName: HouseholdSizeName = 'tiny',
  types?: TaskType[],
): HouseholdTask {
  const size = HOUSEHOLD_SIZES[sizeName];
  const rand = seededRandom(seed * 7919 + 17);
  const allowed =
    types ?? (['pick_and_place', 'clean', 'heat', 'cool', 'examine', 'pick_two'] as TaskType[]);
  const type = allowed[seed % allowed.length] as TaskType;
  const counts = new Map<string, number>();
  const receptacles: Receptacle[] = [];
  const add = (kind: ReceptacleKind, room: string) => {
    const n = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, n);
    receptacles.push({ name: `${kind} ${n}`, kind, room });
  };
  for (const room of size.rooms)
    for (let i = 0; i < size.plainPerRoom; i++) add(pick(rand, PLAIN), room);
  const appliance: Partial<Record<TaskType, ReceptacleKind>> = {
    clean: 'sinkbasin',
    heat: 'microwave',
    cool: 'fridge',
    examine: 'desklamp',
  };
  const needed = appliance[type];
  if (needed) add(needed, size.rooms[0] as string);
  if (sizeName !== 'tiny')
    for (const k of ['sinkbasin', 'microwave', 'fridge'] as const)
      if (k !== needed) add(k, size.rooms[0] as string);

  const kinds = shuffle(rand, OBJECT_KINDS).slice(0, size.objectKinds);
  const objects: HouseObject[] = [];
  const start: number[] = [];
  const plainIdx = receptacles
    .map((r, i) => (PLAIN.includes(r.kind) ? i : -1))
    .filter((i) => i >= 0);
  const copies = type === 'pick_two' ? Math.max(2, size.copies) : size.copies;
  for (const kind of kinds) {
    for (let c = 1; c <= copies; c++) {
      objects.push({ name: `${kind} ${c}`, kind });
      start.push(pick(rand, plainIdx));
    }
  }
  const objectKind = kinds[0] as string;
  // The target is a plain receptacle that does not already hold every object of the kind.
  const holdsKind = new Set(objects.map((o, i) => (o.kind === objectKind ? start[i] : -1)));
  const candidates = plainIdx.filter((i) => !holdsKind.has(i));
  const target = candidates.length
    ? pick(rand, candidates)
    : (plainIdx.find((i) => i !== start[0]) as number);
  const targetName = (receptacles[target] as Receptacle).name;
  const description = {
    pick_and_place: `put a ${objectKind} in ${targetName}`,
    clean: `put a clean ${objectKind} in ${targetName}`,
    heat: `put a hot ${objectKind} in ${targetName}`,
    cool: `put a cool ${objectKind} in ${targetName}`,
    examine: `look at ${objectKind} under the desklamp`,
    pick_two: `put two ${objectKind} in ${targetName}`,
  }[type];
  return {
    seed,
    size: sizeName,
    type,
    receptacles,
    objects,
    start,
    objectKind,
    target,
    maxSteps: size.maxSteps,
    description,
  };
}

/** Held-out evaluation tasks are the seeds ≡ 0 (mod 5); the rest train. */
export const isEvaluationSeed = (seed: number): boolean => seed % 5 === 0;
