import {
  admissibleActions,
  householdTask,
  HOUSEHOLD_SIZES,
  initialState,
  INVALID_PENALTY,
  isEvaluationSeed,
  observe,
  PolicyEvaluation,
  shortestSolution,
  step,
  uniformPolicy,
  type HouseholdState,
  type HouseholdTask,
  type Policy,
} from '../src';

function run(task: HouseholdTask, actions: string[]) {
  let s = initialState(task);
  const trace: { obs: string; reward: number; valid: boolean }[] = [];
  for (const a of actions) {
    const r = step(task, s, a);
    trace.push({ obs: observe(task, r.state), reward: r.reward, valid: r.valid });
    s = r.state;
  }
  return { state: s, trace };
}

/** Two tables, an apple on the first, to be put on the second, within four steps: values by hand. */
const TWO_TABLES: HouseholdTask = {
  seed: 0,
  size: 'tiny',
  type: 'pick_and_place',
  receptacles: [
    { name: 'table 1', kind: 'table', room: 'kitchen' },
    { name: 'table 2', kind: 'table', room: 'kitchen' },
  ],
  objects: [{ name: 'apple 1', kind: 'apple' }],
  start: [0],
  objectKind: 'apple',
  target: 1,
  maxSteps: 4,
  description: 'put a apple in table 2',
};

describe('household tasks', () => {
  test('a task is a deterministic function of its seed and size', () => {
    expect(householdTask(7, 'small')).toEqual(householdTask(7, 'small'));
    expect(householdTask(7, 'small')).not.toEqual(householdTask(8, 'small'));
  });

  test('every tiny task of the first 60 seeds is solvable within its cap, every type occurs, solutions take 4 to 8 steps', () => {
    const types = new Set<string>();
    for (let seed = 0; seed < 60; seed++) {
      const task = householdTask(seed, 'tiny');
      types.add(task.type);
      const solution = shortestSolution(task);
      expect(solution).not.toBeNull();
      expect(solution!.length).toBeGreaterThanOrEqual(4);
      expect(solution!.length).toBeLessThanOrEqual(task.maxSteps);
      expect(run(task, solution!).state.done).toBe('success');
    }
    expect([...types].sort()).toEqual([
      'clean',
      'cool',
      'examine',
      'heat',
      'pick_and_place',
      'pick_two',
    ]);
  });

  test('larger sizes have more rooms and longer caps', () => {
    expect(HOUSEHOLD_SIZES.medium.rooms.length).toBeGreaterThan(HOUSEHOLD_SIZES.tiny.rooms.length);
    const task = householdTask(11, 'medium');
    expect(new Set(task.receptacles.map((r) => r.room)).size).toBe(3);
    expect(shortestSolution(task)).not.toBeNull();
  });

  test('train and held-out evaluation seeds are disjoint and stable', () => {
    const evalSeeds = Array.from({ length: 20 }, (_, s) => s).filter(isEvaluationSeed);
    expect(evalSeeds).toEqual([0, 5, 10, 15]);
  });
});

describe('dynamics and rewards', () => {
  const task = householdTask(3, 'tiny');
  const solution = shortestSolution(task)!;

  test('the same actions give the same observations and rewards', () => {
    expect(run(task, solution)).toEqual(run(householdTask(3, 'tiny'), solution));
  });

  test('success pays 1 on the completing step and ends the episode', () => {
    const { state, trace } = run(task, solution);
    expect(trace.map((t) => t.reward)).toEqual([...solution.slice(1).map(() => 0), 1]);
    expect(state.done).toBe('success');
    expect(() => step(task, state, 'look')).toThrow('the episode is over');
  });

  test('an inadmissible action costs the penalty and changes nothing but the step count', () => {
    const s0 = initialState(task);
    const r = step(task, s0, 'dance');
    expect(r).toMatchObject({ reward: INVALID_PENALTY, valid: false });
    expect({ ...r.state, step: 0 }).toEqual(s0);
    expect(observe(task, r.state)).toBe(observe(task, s0));
  });

  test('the step cap truncates the episode', () => {
    const { state, trace } = run(task, Array(task.maxSteps).fill('look'));
    expect(state.done).toBe('truncated');
    expect(trace.every((t) => t.reward === 0)).toBe(true);
  });

  test('observations are the situation, not the history', () => {
    const direct = run(task, [solution[0]!]).state;
    const roundabout = run(task, ['look', 'inventory', solution[0]!]).state;
    expect(observe(task, roundabout)).toBe(observe(task, direct));
    expect(admissibleActions(task, roundabout)).toEqual(admissibleActions(task, direct));
  });
});

describe('facts in the observation', () => {
  test('they follow the task along its solution: where the object is, holding it, its condition, the target', () => {
    const task = householdTask(1, 'tiny'); // a clean task: take it, clean it at the sink, put it on the target
    expect(task.type).toBe('clean');
    const solution = shortestSolution(task)!;
    const facts = [
      initialState(task),
      ...solution.map((_, i) => run(task, solution.slice(0, i + 1)).state),
    ].map((s) => /Facts: (.*)\.$/.exec(observe(task, s))![1]!.split(' '));
    expect(facts[0]).toEqual(['taskclean', 'atstart', 'handempty']);
    const taking = solution.findIndex((a) => a.startsWith('take '));
    expect(facts[taking]).toContain('taskobjecthere');
    expect(facts[taking + 1]).toEqual(
      expect.arrayContaining(['holdingtaskobject', 'conditionunmet']),
    );
    const cleaning = solution.findIndex((a) => a.startsWith('clean '));
    expect(facts[cleaning]).toContain('atsinkbasin');
    expect(facts[cleaning + 1]).toContain('conditionmet');
    expect(facts[solution.length - 1]).toContain('attarget');
  });
});

describe('exact policy evaluation', () => {
  test('uniform policy on the two-table task: success needs the one 4-step path, chosen with probability (1/4)^4', () => {
    const s0 = initialState(TWO_TABLES);
    expect(admissibleActions(TWO_TABLES, s0)).toHaveLength(4);
    expect(new PolicyEvaluation(TWO_TABLES, uniformPolicy).value(s0)).toBeCloseTo(1 / 256, 15);
    // With discounting, the reward of the 4th action is discounted three times.
    expect(new PolicyEvaluation(TWO_TABLES, uniformPolicy, 0.9).value(s0)).toBeCloseTo(
      0.9 ** 3 / 256,
      15,
    );
    // After the right first move, three 1-in-4 choices remain.
    const ev = new PolicyEvaluation(TWO_TABLES, uniformPolicy);
    expect(ev.q(s0, 'go to table 1')).toBeCloseTo(1 / 64, 15);
    expect(ev.q(s0, 'go to table 2')).toBe(0);
    expect(ev.q(s0, 'dance')).toBeCloseTo(INVALID_PENALTY, 15);
  });

  test('a policy that follows the solution is worth 1 (γ^(n−1) discounted); advantages average to zero under the policy', () => {
    const task = householdTask(9, 'tiny');
    const solution = shortestSolution(task)!;
    const follow: Policy = (_t, s, actions) => actions.map((a) => (a === solution[s.step] ? 1 : 0));
    expect(new PolicyEvaluation(task, follow).value(initialState(task))).toBe(1);
    expect(new PolicyEvaluation(task, follow, 0.95).value(initialState(task))).toBeCloseTo(
      0.95 ** (solution.length - 1),
      12,
    );
    const ev = new PolicyEvaluation(task, uniformPolicy, 0.95);
    let s: HouseholdState = initialState(task);
    for (const a of solution.slice(0, 3)) {
      const actions = admissibleActions(task, s);
      const mean = actions.reduce((acc, b) => acc + ev.advantage(s, b) / actions.length, 0);
      expect(Math.abs(mean)).toBeLessThan(1e-12);
      expect(ev.advantage(s, a)).toBeGreaterThan(0); // the solution's move beats the average move
      s = step(task, s, a).state;
    }
  });
});
