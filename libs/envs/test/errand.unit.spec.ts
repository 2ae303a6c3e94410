import {
  ERRAND_INVALID_PENALTY,
  ExactEvaluation,
  errandEnvironment,
  errandTask,
  seededRandom,
  textEnvironment,
  type ErrandState,
  type ErrandTask,
} from '../src';

const env = errandEnvironment('tiny');

test('an errand is a function of its seed, offers the same free-text commands in every state, and is listed by name', () => {
  expect(errandTask(17)).toEqual(errandTask(17));
  expect(errandTask(17)).not.toEqual(errandTask(18));
  const task = env.task(17);
  expect(task.commands).toHaveLength(5);
  expect(env.admissibleActions(task, env.initialState(task))).toEqual(task.commands);
  expect(textEnvironment('errand-tiny').name).toBe('errand-tiny');
  expect(env.isEvaluationSeed(10)).toBe(true);
});

test('outcomes are a distribution; an invalid command costs the penalty and moves nothing; moves slip', () => {
  const task = env.task(3);
  const s = env.initialState(task);
  for (const a of [...task.commands, 'sing a song']) {
    const outcomes = env.outcomes!(task, s, a);
    expect(outcomes.reduce((x, o) => x + o.p, 0)).toBeCloseTo(1, 12);
    for (const o of outcomes) expect(o.step.state.step).toBe(1);
  }
  const fixture = env.outcomes!(task, s, `take ${task.fixture}`);
  expect(fixture.every((o) => o.step.reward === ERRAND_INVALID_PENALTY && !o.step.valid)).toBe(
    true,
  );
  expect(
    fixture.every((o) => o.step.state.room === s.room && o.step.state.itemAt === s.itemAt),
  ).toBe(true);
  const way = s.room === 0 ? 'go east' : 'go west';
  const moved = env.outcomes!(task, s, way).filter((o) => o.step.state.room !== s.room);
  expect(moved.reduce((x, o) => x + o.p, 0)).toBeCloseTo(0.9, 12);
});

/** The shortest way to finish an errand, taking every move until it succeeds. */
function solve(task: ErrandTask, rand: () => number): { state: ErrandState; rewards: number[] } {
  let s = env.initialState(task);
  const rewards: number[] = [];
  const toward = (room: number) => (room < s.room ? 'go west' : 'go east');
  while (!s.done) {
    const a =
      s.itemAt >= 0
        ? s.room === s.itemAt
          ? `take ${task.item}`
          : toward(s.itemAt)
        : s.room === task.targetRoom
          ? `drop ${task.item}`
          : toward(task.targetRoom);
    const r = env.step(task, s, a, rand);
    rewards.push(r.reward);
    s = r.state;
  }
  return { state: s, rewards };
}

test('carrying the item to the target room succeeds with reward 1', () => {
  const rand = seededRandom(2);
  for (let seed = 1; seed <= 20; seed++) {
    const { state, rewards } = solve(env.task(seed), rand);
    expect(state.done).toBe('success');
    expect(rewards.at(-1)).toBe(1);
  }
});

test('the exact value of the latent start state equals the mean return of many sampled episodes (uniform policy)', () => {
  const task = env.task(4);
  const uniform = (_t: ErrandTask, _s: ErrandState, actions: string[]) =>
    actions.map(() => 1 / actions.length);
  const exact = new ExactEvaluation(env, task, uniform, 1);
  const v = exact.value(env.initialState(task));
  const rand = seededRandom(9);
  const returns: number[] = [];
  for (let i = 0; i < 20000; i++) {
    let s = env.initialState(task);
    let g = 0;
    while (!s.done) {
      const r = env.step(task, s, task.commands[Math.floor(rand() * 5)] as string, rand);
      g += r.reward;
      s = r.state;
    }
    returns.push(g);
  }
  const mean = returns.reduce((a, b) => a + b, 0) / returns.length;
  const sd = Math.sqrt(returns.reduce((a, b) => a + (b - mean) ** 2, 0) / (returns.length - 1));
  expect(Math.abs(mean - v)).toBeLessThan(4 * (sd / Math.sqrt(returns.length)));
  expect(exact.statesEvaluated).toBeGreaterThan(100);
});
