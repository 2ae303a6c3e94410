import type { EnvStep, TextEnvironment } from '../text-environment';
import {
  DIRECTIONS,
  move,
  offset,
  sokobanLevel,
  type Direction,
  type SokobanLevel,
  type SokobanSizeName,
} from './sokoban-level';

export interface SokobanState {
  player: number;
  /** Box cells, sorted (so equal situations have equal keys). */
  boxes: readonly number[];
  step: number;
  done: null | 'success' | 'truncated';
}

export const SOKOBAN_SUCCESS_REWARD = 1;
export const SOKOBAN_INVALID_PENALTY = -0.1;

const ACTION = (d: Direction) => `move ${d}`;

export function sokobanInitialState(level: SokobanLevel): SokobanState {
  return { player: level.player, boxes: level.boxes, step: 0, done: null };
}

/** The moves that change something: not into a wall, not pushing a box into a wall or another box. */
export function sokobanAdmissibleActions(level: SokobanLevel, s: SokobanState): string[] {
  if (s.done) return [];
  return DIRECTIONS.filter((d) => move(level, s.player, s.boxes, d)).map(ACTION);
}

/** Deterministic; an inadmissible move costs the penalty and changes nothing but the step count. */
export function sokobanStep(
  level: SokobanLevel,
  s: SokobanState,
  action: string,
): EnvStep<SokobanState> {
  if (s.done) throw new Error('the episode is over');
  const dir = DIRECTIONS.find((d) => ACTION(d) === action);
  const moved = dir && move(level, s.player, s.boxes, dir);
  let next: SokobanState = { ...s, step: s.step + 1 };
  let reward = 0;
  if (!moved) {
    reward = SOKOBAN_INVALID_PENALTY;
  } else {
    next = { ...next, player: moved.player, boxes: moved.boxes };
    if (moved.boxes.every((b) => level.goals.includes(b))) {
      next = { ...next, done: 'success' };
      reward = SOKOBAN_SUCCESS_REWARD;
    }
  }
  if (!next.done && next.step >= level.maxSteps) next = { ...next, done: 'truncated' };
  return { state: next, reward, valid: Boolean(moved) };
}

/**
 * The anchor observation: the grid as text (# wall, . goal, $ box, * box on a goal, @ you, + you on
 * a goal), then the same facts as words a bag-of-words reader can use — what lies in each direction,
 * where the boxes are from you, and where each box's nearest free goal is from it. Nothing depends on
 * the step count, so a situation reads the same in every rollout.
 */
export function sokobanObserve(level: SokobanLevel, s: SokobanState): string {
  const rows: string[] = [];
  for (let y = 0; y < level.height; y++) {
    let row = '';
    for (let x = 0; x < level.width; x++) {
      const c = y * level.width + x;
      const goal = level.goals.includes(c);
      row += level.walls[c]
        ? '#'
        : s.boxes.includes(c)
          ? goal
            ? '*'
            : '$'
          : c === s.player
            ? goal
              ? '+'
              : '@'
            : goal
              ? '.'
              : ' ';
    }
    rows.push(row);
  }
  const around = DIRECTIONS.map((d) => {
    const c = s.player + offset(level, d);
    if (level.walls[c]) return `wall${d}`;
    if (s.boxes.includes(c))
      return move(level, s.player, s.boxes, d) ? `box${d} push${d}` : `box${d} stuck${d}`;
    return level.goals.includes(c) ? `goal${d}` : `floor${d}`;
  });
  const facts: string[] = [];
  for (const b of s.boxes) {
    if (level.goals.includes(b)) {
      facts.push('boxdone');
      continue;
    }
    facts.push(...towards(level, s.player, b).map((d) => `boxis${d}`));
    const free = level.goals.filter((g) => !s.boxes.includes(g));
    const nearest = free.sort((g, h) => distance(level, b, g) - distance(level, b, h))[0];
    if (nearest !== undefined)
      facts.push(...towards(level, b, nearest).map((d) => `goalofboxis${d}`));
    if (cornered(level, b)) facts.push('boxcornered');
  }
  const left = s.boxes.filter((b) => !level.goals.includes(b)).length;
  return (
    `Push every box onto a goal. ${left} ${left === 1 ? 'box is' : 'boxes are'} left.\n${rows.join('\n')}\n` +
    `Around you: ${around.join(' ')}. Boxes: ${facts.join(' ')}.`
  );
}

function towards(level: SokobanLevel, from: number, to: number): Direction[] {
  const dx = (to % level.width) - (from % level.width);
  const dy = Math.floor(to / level.width) - Math.floor(from / level.width);
  const out: Direction[] = [];
  if (dy < 0) out.push('up');
  if (dy > 0) out.push('down');
  if (dx < 0) out.push('left');
  if (dx > 0) out.push('right');
  return out;
}

const distance = (level: SokobanLevel, a: number, b: number) =>
  Math.abs((a % level.width) - (b % level.width)) +
  Math.abs(Math.floor(a / level.width) - Math.floor(b / level.width));

/** A box off goal against two perpendicular walls can never move again: the episode is lost. */
function cornered(level: SokobanLevel, b: number): boolean {
  const w = (d: Direction) => level.walls[b + offset(level, d)] === true;
  return (w('up') || w('down')) && (w('left') || w('right'));
}

export function sokobanSituationKey(s: SokobanState): string {
  return `${s.player}|${s.boxes.join(',')}|${s.done ?? ''}`;
}

export function sokobanEnvironment(
  size: SokobanSizeName,
): TextEnvironment<SokobanLevel, SokobanState> {
  return {
    name: `sokoban-${size}`,
    exact: size === 'tiny',
    task: (seed) => sokobanLevel(seed, size),
    isEvaluationSeed: (seed) => seed % 5 === 0,
    initialState: sokobanInitialState,
    admissibleActions: sokobanAdmissibleActions,
    observe: sokobanObserve,
    step: sokobanStep,
    situationKey: sokobanSituationKey,
  };
}
