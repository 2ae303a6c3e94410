import { seededRandom } from '@creditlab/random';

export interface SokobanSize {
  /** Interior width and height (the border walls come on top). */
  inner: number;
  boxes: number;
  /** Interior wall cells placed at random (kept only if the floor stays connected). */
  innerWalls: number;
  /** Random reverse moves (pulls) from the solved position: how scrambled a level starts. */
  reverseMoves: number;
  /** Levels whose shortest solution is shorter are discarded. */
  minSolution: number;
  maxSteps: number;
}

/** tiny: one box in a 5×5 room, exactly solvable; small: two boxes in 6×6. */
export const SOKOBAN_SIZES = {
  tiny: { inner: 5, boxes: 1, innerWalls: 2, reverseMoves: 14, minSolution: 3, maxSteps: 12 },
  small: { inner: 6, boxes: 2, innerWalls: 3, reverseMoves: 40, minSolution: 6, maxSteps: 30 },
} satisfies Record<string, SokobanSize>;
export type SokobanSizeName = keyof typeof SOKOBAN_SIZES;

/** One level: the room, the goals, where the boxes and the player start, the step cap. Cells are y·width + x. */
export interface SokobanLevel {
  seed: number;
  size: SokobanSizeName;
  width: number;
  height: number;
  walls: boolean[];
  goals: number[];
  boxes: number[];
  player: number;
  maxSteps: number;
  /** Length of a shortest solution (checked by breadth-first search when the level was made). */
  solutionLength: number;
}

export type Direction = 'up' | 'down' | 'left' | 'right';
export const DIRECTIONS: Direction[] = ['up', 'down', 'left', 'right'];

export function offset(level: Pick<SokobanLevel, 'width'>, d: Direction): number {
  return d === 'up' ? -level.width : d === 'down' ? level.width : d === 'left' ? -1 : 1;
}

/**
 * The level of `seed`: a room with random interior walls, boxes placed on their goals, then
 * scrambled by random reverse moves (the player walks, and pulls a box behind it now and then). A
 * reverse move undoes a forward push, so every level made this way is solvable; the breadth-first
 * solver confirms it within the step cap and discards levels that are too easy.
 */
export function sokobanLevel(seed: number, sizeName: SokobanSizeName = 'tiny'): SokobanLevel {
  const size = SOKOBAN_SIZES[sizeName];
  const rand = seededRandom(seed * 7907 + 29);
  const width = size.inner + 2;
  const height = size.inner + 2;
  const cells = width * height;
  const randomCell = (ok: (c: number) => boolean) => {
    for (;;) {
      const c = Math.floor(rand() * cells);
      if (ok(c)) return c;
    }
  };
  for (let attempt = 0; ; attempt++) {
    if (attempt > 1000) throw new Error(`no sokoban level for seed ${seed} after 1000 attempts`);
    const walls = Array.from({ length: cells }, (_, c) => {
      const x = c % width;
      const y = Math.floor(c / width);
      return x === 0 || y === 0 || x === width - 1 || y === height - 1;
    });
    for (let i = 0; i < size.innerWalls; i++) {
      const c = randomCell((k) => !walls[k]);
      walls[c] = true;
      if (!connected(walls, width)) walls[c] = false;
    }
    const goals: number[] = [];
    while (goals.length < size.boxes)
      goals.push(randomCell((c) => !walls[c] && !goals.includes(c)));
    const boxes = [...goals];
    let player = randomCell((c) => !walls[c] && !boxes.includes(c));
    for (let m = 0; m < size.reverseMoves; m++) {
      const d = offset({ width }, DIRECTIONS[Math.floor(rand() * 4)] as Direction);
      const to = player + d;
      if (walls[to] || boxes.includes(to)) continue;
      const behind = boxes.indexOf(player - d);
      if (behind >= 0 && rand() < 0.7) boxes[behind] = player; // pull the box along
      player = to;
    }
    if (boxes.every((b) => goals.includes(b))) continue;
    const level: SokobanLevel = {
      seed,
      size: sizeName,
      width,
      height,
      walls,
      goals,
      boxes: [...boxes].sort((a, b) => a - b),
      player,
      maxSteps: size.maxSteps,
      solutionLength: 0,
    };
    const length = shortestPushSolution(level);
    if (length === null || length < size.minSolution || length > size.maxSteps) continue;
    return { ...level, solutionLength: length };
  }
}

function connected(walls: boolean[], width: number): boolean {
  const floor = walls.flatMap((w, c) => (w ? [] : [c]));
  const seen = new Set([floor[0]]);
  const queue = [floor[0] as number];
  while (queue.length) {
    const c = queue.pop() as number;
    for (const d of [-width, width, -1, 1]) {
      if (!walls[c + d] && !seen.has(c + d)) {
        seen.add(c + d);
        queue.push(c + d);
      }
    }
  }
  return seen.size === floor.length;
}

/** Moves of a shortest solution (breadth-first over player and box positions), or null. */
export function shortestPushSolution(level: SokobanLevel): number | null {
  const key = (p: number, boxes: readonly number[]) => `${p}|${boxes.join(',')}`;
  const solved = (boxes: readonly number[]) => boxes.every((b) => level.goals.includes(b));
  let frontier = [{ player: level.player, boxes: level.boxes }];
  const seen = new Set([key(level.player, level.boxes)]);
  for (let depth = 1; frontier.length && depth <= level.maxSteps; depth++) {
    const next: typeof frontier = [];
    for (const s of frontier) {
      for (const dir of DIRECTIONS) {
        const moved = move(level, s.player, s.boxes, dir);
        if (!moved) continue;
        if (solved(moved.boxes)) return depth;
        const k = key(moved.player, moved.boxes);
        if (seen.has(k)) continue;
        seen.add(k);
        next.push(moved);
      }
    }
    frontier = next;
  }
  return null;
}

/** The result of walking `dir` (pushing a box if one is there), or null when a wall or a second box blocks. */
export function move(
  level: Pick<SokobanLevel, 'width' | 'walls'>,
  player: number,
  boxes: readonly number[],
  dir: Direction,
): { player: number; boxes: number[] } | null {
  const d = offset(level, dir);
  const to = player + d;
  if (level.walls[to]) return null;
  const pushed = boxes.indexOf(to);
  if (pushed < 0) return { player: to, boxes: [...boxes] };
  const beyond = to + d;
  if (level.walls[beyond] || boxes.includes(beyond)) return null;
  const next = [...boxes];
  next[pushed] = beyond;
  return { player: to, boxes: next.sort((a, b) => a - b) };
}
