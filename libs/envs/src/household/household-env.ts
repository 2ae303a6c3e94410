import type { HouseholdTask, Receptacle } from './household-task';

/** Everything that changes during an episode. Immutable: `step` returns a new state. */
export interface HouseholdState {
  /** Receptacle the agent stands at; -1 = where it starts, in the middle of the first room. */
  at: number;
  /** Object in hand; -1 = nothing. */
  holding: number;
  /** Receptacle of each object; -1 while held. */
  where: readonly number[];
  /** Per object: 1 = clean, 2 = hot, 4 = cool. */
  flags: readonly number[];
  /** The task's object was looked at under the desklamp. */
  examined: boolean;
  step: number;
  done: null | 'success' | 'truncated';
}

export interface StepResult {
  state: HouseholdState;
  reward: number;
  /** Whether the action was admissible; an inadmissible one costs INVALID_PENALTY and changes nothing. */
  valid: boolean;
}

export const SUCCESS_REWARD = 1;
export const INVALID_PENALTY = -0.1;
const FLAG = { clean: 1, hot: 2, cool: 4 } as const;

export function initialState(task: HouseholdTask): HouseholdState {
  return {
    at: -1,
    holding: -1,
    where: [...task.start],
    flags: task.objects.map(() => 0),
    examined: false,
    step: 0,
    done: null,
  };
}

/** The canonical actions the environment accepts in `s`, in a stable order. */
export function admissibleActions(task: HouseholdTask, s: HouseholdState): string[] {
  if (s.done) return [];
  const actions: string[] = [];
  task.receptacles.forEach((r, i) => {
    if (i !== s.at) actions.push(`go to ${r.name}`);
  });
  const here = s.at >= 0 ? (task.receptacles[s.at] as Receptacle) : undefined;
  if (here) {
    if (s.holding < 0) {
      s.where.forEach((w, o) => {
        if (w === s.at) actions.push(`take ${task.objects[o]!.name} from ${here.name}`);
      });
    } else {
      const held = task.objects[s.holding]!.name;
      if (here.kind !== 'desklamp') actions.push(`put ${held} in/on ${here.name}`);
      if (here.kind === 'sinkbasin') actions.push(`clean ${held} with ${here.name}`);
      if (here.kind === 'microwave') actions.push(`heat ${held} with ${here.name}`);
      if (here.kind === 'fridge') actions.push(`cool ${held} with ${here.name}`);
    }
    if (here.kind === 'desklamp') actions.push(`use ${here.name}`);
  }
  actions.push('look', 'inventory');
  return actions;
}

/**
 * The anchor observation of `s`: the task and what the agent sees now, without
 * history, so that identical situations in different rollouts read identically.
 */
export function observe(task: HouseholdTask, s: HouseholdState): string {
  const place =
    s.at < 0
      ? `in the middle of the ${task.receptacles[0]!.room}`
      : `at ${task.receptacles[s.at]!.name}`;
  let seen = '';
  if (s.at >= 0) {
    const items = s.where.flatMap((w, o) => (w === s.at ? [`a ${describe(task, s, o)}`] : []));
    seen = items.length
      ? ` On the ${task.receptacles[s.at]!.name}, you see ${items.join(', ')}.`
      : ` The ${task.receptacles[s.at]!.name} is empty.`;
  }
  const hand = s.holding < 0 ? 'nothing' : `a ${describe(task, s, s.holding)}`;
  return `Your task is to: ${task.description}. You are ${place}.${seen} You are carrying ${hand}. Facts: ${facts(task, s).join(' ')}.`;
}

const NEEDED: Partial<Record<HouseholdTask['type'], number>> = {
  clean: FLAG.clean,
  heat: FLAG.hot,
  cool: FLAG.cool,
};

/**
 * What a reader of the text would infer about the task from the situation, as compound words: the
 * trainer's policy is a bag of words, which cannot relate "apple" in the task to "apple" in the hand
 * by itself, where a language model would. Functions of the situation only, like the rest.
 */
function facts(task: HouseholdTask, s: HouseholdState): string[] {
  const out: string[] = [`task${task.type.replace('_', '')}`];
  const isTaskObject = (o: number) => task.objects[o]!.kind === task.objectKind;
  const needed = NEEDED[task.type] ?? 0;
  const here = s.at >= 0 ? task.receptacles[s.at]! : undefined;
  out.push(here ? `at${here.kind}` : 'atstart');
  if (s.at === task.target) out.push('attarget');
  if (
    s.where.some(
      (w, o) =>
        w === s.at && isTaskObject(o) && !(task.type === 'pick_two' && s.at === task.target),
    )
  )
    out.push('taskobjecthere');
  if (s.holding < 0) out.push('handempty');
  else if (!isTaskObject(s.holding)) out.push('holdingother');
  else {
    out.push('holdingtaskobject');
    if (needed)
      out.push(
        ((s.flags[s.holding] as number) & needed) === needed ? 'conditionmet' : 'conditionunmet',
      );
  }
  if (task.type === 'pick_two') {
    const placed = s.where.filter((w, o) => w === task.target && isTaskObject(o)).length;
    out.push(`placed${placed}`);
  }
  return out;
}

function describe(task: HouseholdTask, s: HouseholdState, o: number): string {
  const f = s.flags[o] as number;
  const adjectives = [
    f & FLAG.clean ? 'clean' : '',
    f & FLAG.hot ? 'hot' : '',
    f & FLAG.cool ? 'cool' : '',
  ].filter(Boolean);
  return [...adjectives, task.objects[o]!.name].join(' ');
}

/** Applies `action` (canonical text) to `s`. Deterministic: the same task, state and action, the same result. */
export function step(task: HouseholdTask, s: HouseholdState, action: string): StepResult {
  if (s.done) throw new Error('the episode is over');
  const valid = admissibleActions(task, s).includes(action);
  let next: HouseholdState = { ...s, step: s.step + 1 };
  let reward = 0;
  if (!valid) {
    reward = INVALID_PENALTY;
  } else {
    next = apply(task, next, action);
    if (succeeded(task, next)) {
      next = { ...next, done: 'success' };
      reward = SUCCESS_REWARD;
    }
  }
  if (!next.done && next.step >= task.maxSteps) next = { ...next, done: 'truncated' };
  return { state: next, reward, valid };
}

function apply(task: HouseholdTask, s: HouseholdState, action: string): HouseholdState {
  const index = (name: string) => task.receptacles.findIndex((r) => r.name === name);
  if (action.startsWith('go to ')) return { ...s, at: index(action.slice(6)) };
  if (action.startsWith('take ')) {
    const o = task.objects.findIndex((x) => action.startsWith(`take ${x.name} from `));
    const where = [...s.where];
    where[o] = -1;
    return { ...s, holding: o, where };
  }
  if (action.startsWith('put ')) {
    const where = [...s.where];
    where[s.holding] = s.at;
    return { ...s, holding: -1, where };
  }
  const flag = action.startsWith('clean ')
    ? FLAG.clean
    : action.startsWith('heat ')
      ? FLAG.hot
      : action.startsWith('cool ')
        ? FLAG.cool
        : 0;
  if (flag) {
    const flags = [...s.flags];
    // Heating undoes cooling and vice versa; cleaning stays.
    flags[s.holding] =
      ((flags[s.holding] as number) &
        ~(flag === FLAG.hot ? FLAG.cool : flag === FLAG.cool ? FLAG.hot : 0)) |
      flag;
    return { ...s, flags };
  }
  if (
    action.startsWith('use ') &&
    s.holding >= 0 &&
    task.objects[s.holding]!.kind === task.objectKind
  )
    return { ...s, examined: true };
  return s; // look, inventory, use without the object
}

function succeeded(task: HouseholdTask, s: HouseholdState): boolean {
  const placed = (needed: number) =>
    s.where.filter(
      (w, o) =>
        w === task.target &&
        task.objects[o]!.kind === task.objectKind &&
        ((s.flags[o] as number) & needed) === needed,
    ).length;
  switch (task.type) {
    case 'pick_and_place':
      return placed(0) >= 1;
    case 'clean':
      return placed(FLAG.clean) >= 1;
    case 'heat':
      return placed(FLAG.hot) >= 1;
    case 'cool':
      return placed(FLAG.cool) >= 1;
    case 'pick_two':
      return placed(0) >= 2;
    case 'examine':
      return s.examined;
  }
}

/** A key for the situation of `s`, without the step counter (for grouping equal states across time). */
export function situationKey(s: HouseholdState): string {
  return `${s.at}|${s.holding}|${s.where.join(',')}|${s.flags.join(',')}|${s.examined ? 1 : 0}|${s.done ?? ''}`;
}
