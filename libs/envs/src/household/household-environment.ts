import type { TextEnvironment } from '../text-environment';
import {
  admissibleActions,
  initialState,
  observe,
  situationKey,
  step,
  type HouseholdState,
} from './household-env';
import {
  householdTask,
  isEvaluationSeed,
  type HouseholdSizeName,
  type HouseholdTask,
} from './household-task';

export function householdEnvironment(
  size: HouseholdSizeName,
): TextEnvironment<HouseholdTask, HouseholdState> {
  return {
    name: `household-${size}`,
    exact: size === 'tiny',
    task: (seed) => householdTask(seed, size),
    isEvaluationSeed,
    initialState,
    admissibleActions,
    observe,
    step,
    situationKey,
  };
}
