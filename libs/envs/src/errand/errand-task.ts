import { pick, seededRandom, shuffle } from '@creditlab/random';

/** One errand: a row of rooms, an item somewhere, a room to bring it to, and the noise of the house. */
export interface ErrandTask {
  seed: number;
  size: ErrandSizeName;
  /** Room names, west to east. */
  rooms: string[];
  item: string;
  /** A thing in the item's room that cannot be taken (taking it is an invalid action). */
  fixture: string;
  itemRoom: number;
  targetRoom: number;
  startRoom: number;
  /** Background sentences, one of which is heard at a time. */
  ambient: string[];
  maxSteps: number;
  description: string;
  /** Every command the agent may type in this task, valid or not, in a fixed order. */
  commands: string[];
}

export interface ErrandSize {
  rooms: number;
  /** Background sentences in the pool (more: exact observation matches are rarer). */
  ambient: number;
  /** Chance per step that the background changes. */
  flicker: number;
  /** Chance that a move fails and the agent stays where it is. */
  slip: number;
  maxSteps: number;
}

export const ERRAND_SIZES = {
  // calibrated so that GiGPO's singleton rate (≈ 0.3) and Gated-BEPO's gate-on rate (≈ 0.55–0.6)
  // over a 30-iteration run fall in the ranges seen on ALFWorld (docs/experiments.md)
  tiny: { rooms: 3, ambient: 12, flicker: 0.1, slip: 0.1, maxSteps: 15 },
} satisfies Record<string, ErrandSize>;
export type ErrandSizeName = keyof typeof ERRAND_SIZES;

const ROOMS = ['kitchen', 'hallway', 'study', 'garden', 'cellar', 'attic', 'porch', 'library'];
const ITEMS = ['red key', 'blue cup', 'old map', 'green book', 'small box', 'brass lamp'];
const FIXTURES = ['heavy piano', 'tall clock', 'stone statue', 'big bookcase'];
const AMBIENT = [
  'A clock ticks somewhere.',
  'Rain taps on the windows.',
  'A dog barks outside.',
  'The floor creaks.',
  'Wind rattles the door.',
  'Music plays faintly next door.',
  'A kettle whistles.',
  'Someone laughs upstairs.',
  'A car drives past.',
  'The radiator hums.',
  'Birds sing in the yard.',
  'A phone rings twice.',
  'Thunder rumbles far away.',
  'The fridge clicks on.',
  'A door slams somewhere.',
  'Leaves rustle at the window.',
];

/** The errand of `seed`: a deterministic function of it, so every rollout of a group faces the same house. */
export function errandTask(seed: number, sizeName: ErrandSizeName = 'tiny'): ErrandTask {
  const size = ERRAND_SIZES[sizeName];
  const rand = seededRandom(seed * 104729 + 31);
  const rooms = shuffle(rand, ROOMS).slice(0, size.rooms);
  const item = pick(rand, ITEMS);
  const fixture = pick(rand, FIXTURES);
  const itemRoom = Math.floor(rand() * size.rooms);
  let targetRoom = Math.floor(rand() * (size.rooms - 1));
  if (targetRoom >= itemRoom) targetRoom++;
  const startRoom = Math.floor(rand() * size.rooms);
  const ambient = shuffle(rand, AMBIENT).slice(0, size.ambient);
  const target = rooms[targetRoom] as string;
  return {
    seed,
    size: sizeName,
    rooms,
    item,
    fixture,
    itemRoom,
    targetRoom,
    startRoom,
    ambient,
    maxSteps: size.maxSteps,
    description: `bring the ${item} to the ${target}`,
    commands: ['go west', 'go east', `take ${item}`, `take ${fixture}`, `drop ${item}`],
  };
}

/** Held-out evaluation tasks are the seeds ≡ 0 (mod 5); the rest train. */
export const isErrandEvaluationSeed = (seed: number): boolean => seed % 5 === 0;
