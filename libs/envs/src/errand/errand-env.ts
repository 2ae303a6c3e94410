import type { EnvOutcome, EnvStep, TextEnvironment } from '../text-environment';
import {
  errandTask,
  ERRAND_SIZES,
  isErrandEvaluationSeed,
  type ErrandSizeName,
  type ErrandTask,
} from './errand-task';

/** The latent state: where the agent is, where the item is, what is heard. */
export interface ErrandState {
  room: number;
  /** Room the item lies in; -1 while carried. */
  itemAt: number;
  /** Index of the background sentence heard now; -1 before the first step (quiet). */
  ambient: number;
  /** What the last command did (shown to the agent): an index into EVENTS. */
  last: number;
  step: number;
  done: null | 'success' | 'truncated';
}

export const ERRAND_SUCCESS_REWARD = 1;
export const ERRAND_INVALID_PENALTY = -0.1;

/** What the agent is told its last command did. */
const EVENTS = [
  'You have just arrived.',
  'You walked into the next room.',
  'You slipped and stayed where you were.',
  'You picked it up.',
  'You put it down.',
  'Nothing happened.',
];
const EVENT = { moved: 1, slipped: 2, took: 3, dropped: 4, nothing: 5 } as const;

export function errandInitialState(task: ErrandTask): ErrandState {
  return { room: task.startRoom, itemAt: task.itemRoom, ambient: -1, last: 0, step: 0, done: null };
}

/**
 * What the agent reads: the task, the room, what lies there, what it carries, and the background
 * sentence. Partially observable: the item is seen only in its room, so where to look is not in the
 * text; the background changes at random and is part of the text, so the same situation reads
 * differently across rollouts. Facts at the end, as compound words, as in the other environments.
 */
export function errandObserve(task: ErrandTask, s: ErrandState): string {
  const room = task.rooms[s.room] as string;
  const things = [
    ...(s.itemAt === s.room ? [`a ${task.item}`] : []),
    ...(s.room === task.itemRoom ? [`a ${task.fixture}`] : []),
  ];
  const seen = things.length ? `You see ${things.join(' and ')}.` : 'The room is empty.';
  const hand = s.itemAt < 0 ? `the ${task.item}` : 'nothing';
  const facts = [
    s.itemAt < 0 ? 'carrying' : 'handempty',
    s.itemAt === s.room ? 'itemhere' : '',
    s.room === task.targetRoom ? 'attarget' : '',
    s.room === 0 ? 'westend' : s.room === task.rooms.length - 1 ? 'eastend' : '',
  ].filter(Boolean);
  const heard = s.ambient < 0 ? 'It is quiet.' : (task.ambient[s.ambient] as string);
  return `Your task is to: ${task.description}. ${EVENTS[s.last] as string} You are in the ${room}. ${seen} You carry ${hand}. ${heard} Facts: ${facts.join(' ')}.`;
}

/**
 * Every outcome of typing `action` in `s`, with its probability. An invalid command (no door that
 * way, nothing of that name to take or drop) costs the penalty and changes nothing but the step and
 * maybe the background; a move slips (the agent stays) with the size's chance; the background
 * changes to another sentence with the size's flicker chance.
 */
export function errandOutcomes(
  task: ErrandTask,
  s: ErrandState,
  action: string,
): EnvOutcome<ErrandState>[] {
  if (s.done) throw new Error('the episode is over');
  const size = ERRAND_SIZES[task.size];
  const moves = effects(task, s, action);
  const out: EnvOutcome<ErrandState>[] = [];
  for (const m of moves) {
    for (let a = 0; a < task.ambient.length; a++) {
      // the first step draws the background; after that it changes with the flicker chance
      const p =
        s.ambient < 0
          ? 1 / task.ambient.length
          : a === s.ambient
            ? 1 - size.flicker
            : size.flicker / (task.ambient.length - 1);
      if (p === 0) continue;
      out.push({
        p: m.p * p,
        step: finish(task, { ...s, ...m.change, ambient: a, step: s.step + 1 }, m),
      });
    }
  }
  return out;
}

interface Effect {
  p: number;
  change: Partial<ErrandState> & { last: number };
  valid: boolean;
}

function effects(task: ErrandTask, s: ErrandState, action: string): Effect[] {
  const slip = ERRAND_SIZES[task.size].slip;
  const invalid: Effect[] = [{ p: 1, change: { last: EVENT.nothing }, valid: false }];
  const move = (to: number): Effect[] =>
    to < 0 || to >= task.rooms.length
      ? invalid
      : [
          { p: 1 - slip, change: { room: to, last: EVENT.moved }, valid: true },
          { p: slip, change: { last: EVENT.slipped }, valid: true },
        ];
  if (action === 'go west') return move(s.room - 1);
  if (action === 'go east') return move(s.room + 1);
  if (action === `take ${task.item}`)
    return s.itemAt === s.room
      ? [{ p: 1, change: { itemAt: -1, last: EVENT.took }, valid: true }]
      : invalid;
  if (action === `drop ${task.item}`)
    return s.itemAt < 0
      ? [{ p: 1, change: { itemAt: s.room, last: EVENT.dropped }, valid: true }]
      : invalid;
  return invalid; // the fixture, or any other text
}

function finish(task: ErrandTask, next: ErrandState, e: Effect): EnvStep<ErrandState> {
  let reward = e.valid ? 0 : ERRAND_INVALID_PENALTY;
  let state = next;
  if (e.valid && state.itemAt === task.targetRoom && state.itemAt !== -1) {
    state = { ...state, done: 'success' };
    reward = ERRAND_SUCCESS_REWARD;
  } else if (state.step >= task.maxSteps) state = { ...state, done: 'truncated' };
  return { state, reward, valid: e.valid };
}

/** One outcome drawn with `rand`; without it, the most likely one (what a replay of the commands needs). */
export function errandStep(
  task: ErrandTask,
  s: ErrandState,
  action: string,
  rand?: () => number,
): EnvStep<ErrandState> {
  const outcomes = errandOutcomes(task, s, action);
  if (!rand) return outcomes.reduce((a, b) => (b.p > a.p ? b : a)).step;
  let u = rand();
  for (const o of outcomes) {
    u -= o.p;
    if (u <= 0) return o.step;
  }
  return (outcomes[outcomes.length - 1] as EnvOutcome<ErrandState>).step;
}

export function errandSituationKey(s: ErrandState): string {
  return `${s.room}|${s.itemAt}|${s.ambient}|${s.last}|${s.done ?? ''}`;
}

export function errandEnvironment(size: ErrandSizeName): TextEnvironment<ErrandTask, ErrandState> {
  return {
    name: `errand-${size}`,
    exact: true,
    task: (seed) => errandTask(seed, size),
    isEvaluationSeed: isErrandEvaluationSeed,
    initialState: errandInitialState,
    // free text: every command of the task is offered in every state, valid or not
    admissibleActions: (task, s) => (s.done ? [] : task.commands),
    observe: errandObserve,
    step: errandStep,
    outcomes: errandOutcomes,
    situationKey: errandSituationKey,
  };
}
