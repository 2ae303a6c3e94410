import {
  ExactEvaluation,
  SOKOBAN_INVALID_PENALTY,
  SOKOBAN_SIZES,
  shortestSolutionOf,
  sokobanEnvironment,
  sokobanLevel,
  textEnvironment,
  type SokobanLevel,
  type SokobanState,
} from '../src';

const tiny = sokobanEnvironment('tiny');

/** `#.$@ #`: push left once to win, or step right; a one-row level whose values are worked by hand. */
function corridor(maxSteps: number): SokobanLevel {
  const row = '#.$@ #';
  const width = row.length;
  const walls = [...'#'.repeat(width), ...[...row].map((c) => c === '#'), ...'#'.repeat(width)].map(
    (c) => c === true || c === '#',
  );
  return {
    seed: 0,
    size: 'tiny',
    width,
    height: 3,
    walls,
    goals: [width + 1],
    boxes: [width + 2],
    player: width + 3,
    maxSteps,
    solutionLength: 1,
  };
}

function play(level: SokobanLevel, actions: string[]) {
  let s: SokobanState = tiny.initialState(level);
  const rewards: number[] = [];
  for (const a of actions) {
    const r = tiny.step(level, s, a);
    rewards.push(r.reward);
    s = r.state;
  }
  return { state: s, rewards };
}

describe('sokoban levels', () => {
  test('a level is a deterministic function of its seed and size', () => {
    expect(sokobanLevel(11, 'small')).toEqual(sokobanLevel(11, 'small'));
    expect(sokobanLevel(11, 'small')).not.toEqual(sokobanLevel(12, 'small'));
  });

  test.each(Object.keys(SOKOBAN_SIZES) as (keyof typeof SOKOBAN_SIZES)[])(
    'every %s level of the first 40 seeds is solved by its recorded shortest solution, within the cap',
    (size) => {
      const env = sokobanEnvironment(size);
      for (let seed = 1; seed <= 40; seed++) {
        const level = env.task(seed);
        const solution = shortestSolutionOf(env, level);
        expect(solution).not.toBeNull();
        expect(solution!.length).toBe(level.solutionLength);
        expect(level.solutionLength).toBeGreaterThanOrEqual(SOKOBAN_SIZES[size].minSolution);
        expect(level.solutionLength).toBeLessThanOrEqual(level.maxSteps);
        const { state, rewards } = play(level, solution!);
        expect(state.done).toBe('success');
        expect(rewards.at(-1)).toBe(1);
        expect(rewards.slice(0, -1).every((r) => r === 0)).toBe(true); // the reward is sparse: only at the end
      }
    },
  );

  test('levels are split: seeds ≡ 0 (mod 5) are held out for evaluation', () => {
    expect(tiny.isEvaluationSeed(10)).toBe(true);
    expect(tiny.isEvaluationSeed(11)).toBe(false);
    expect(textEnvironment('sokoban-small').name).toBe('sokoban-small');
    expect(() => textEnvironment('sokoban-huge')).toThrow(/one of household-tiny.*sokoban-small/);
  });
});

describe('sokoban dynamics', () => {
  const level = corridor(3);

  test('admissible moves exclude walls; a push moves the box; an inadmissible move costs the penalty and changes nothing', () => {
    const s0 = tiny.initialState(level);
    expect(tiny.admissibleActions(level, s0)).toEqual(['move left', 'move right']);
    const bump = tiny.step(level, s0, 'move up');
    expect(bump).toMatchObject({ reward: SOKOBAN_INVALID_PENALTY, valid: false });
    expect(bump.state).toEqual({ ...s0, step: 1 });
    const win = tiny.step(level, s0, 'move left');
    expect(win).toMatchObject({
      reward: 1,
      valid: true,
      state: { done: 'success', player: 8, boxes: [7] },
    });
  });

  test('the step cap truncates', () => {
    const { state } = play(level, ['move right', 'move left', 'move right']);
    expect(state.done).toBe('truncated');
  });

  test('observations are anchors: the same situation reads the same whatever the step; they name what is around', () => {
    const s0 = tiny.initialState(level);
    const back = play(level, ['move right', 'move left']).state;
    expect(tiny.observe(level, back)).toBe(tiny.observe(level, s0));
    expect(tiny.observe(level, s0)).toContain('#.$@ #');
    expect(tiny.observe(level, s0)).toContain('boxleft pushleft');
    expect(tiny.observe(level, s0)).toContain('goalofboxisleft');
  });
});

describe('exact evaluation on a hand-worked corridor', () => {
  const uniform = (_l: SokobanLevel, _s: SokobanState, actions: string[]) =>
    actions.map(() => 1 / actions.length);

  test('cap 2: V = ½, A(left) = +½, A(right) = −½', () => {
    const level = corridor(2);
    const ev = new ExactEvaluation(tiny, level, uniform, 1);
    const s0 = tiny.initialState(level);
    expect(ev.value(s0)).toBeCloseTo(0.5, 12);
    expect(ev.advantage(s0, 'move left')).toBeCloseTo(0.5, 12);
    expect(ev.advantage(s0, 'move right')).toBeCloseTo(-0.5, 12);
  });

  test('cap 3, γ = 0.9: V(s0) = ½ + ½·0.9·V(s1), V(s1) = 0.9·½', () => {
    const level = corridor(3);
    const ev = new ExactEvaluation(tiny, level, uniform, 0.9);
    const s0 = tiny.initialState(level);
    expect(ev.value(s0)).toBeCloseTo(0.5 + 0.5 * 0.9 * (0.9 * 0.5), 12);
    // an inadmissible move: the penalty, then the same situation one step later
    expect(ev.q(s0, 'move up')).toBeCloseTo(-0.1 + 0.9 * (0.5 + 0.5 * 0.9 * 0), 12);
  });
});
