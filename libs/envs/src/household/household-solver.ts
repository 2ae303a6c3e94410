import { ExactEvaluation, shortestSolutionOf } from '../exact-evaluation';
import { householdEnvironment } from './household-environment';
import type { HouseholdState } from './household-env';
import type { HouseholdTask } from './household-task';

/** A stochastic policy over the admissible actions of a household state. */
export type Policy = (task: HouseholdTask, state: HouseholdState, actions: string[]) => number[];

export const uniformPolicy: Policy = (_task, _state, actions) =>
  actions.map(() => 1 / actions.length);

/** Exact Q, V and advantages of a policy on a household task (see `ExactEvaluation`). */
export class PolicyEvaluation extends ExactEvaluation<HouseholdTask, HouseholdState> {
  constructor(task: HouseholdTask, policy: Policy, gamma = 1) {
    super(householdEnvironment(task.size), task, policy, gamma);
  }
}

export function shortestSolution(task: HouseholdTask): string[] | null {
  return shortestSolutionOf(householdEnvironment(task.size), task);
}
