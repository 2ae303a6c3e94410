import { errandEnvironment } from './errand/errand-env';
import { ERRAND_SIZES, type ErrandSizeName } from './errand/errand-task';
import { householdEnvironment } from './household/household-environment';
import { HOUSEHOLD_SIZES, type HouseholdSizeName } from './household/household-task';
import { sokobanEnvironment } from './sokoban/sokoban-env';
import { SOKOBAN_SIZES, type SokobanSizeName } from './sokoban/sokoban-level';
import type { TextEnvironment } from './text-environment';

export const ENVIRONMENT_NAMES = [
  ...Object.keys(HOUSEHOLD_SIZES).map((s) => `household-${s}`),
  ...Object.keys(SOKOBAN_SIZES).map((s) => `sokoban-${s}`),
  ...Object.keys(ERRAND_SIZES).map((s) => `errand-${s}`),
];

/** The environment of a name such as "household-tiny", "sokoban-small" or "errand-tiny". */
export function textEnvironment(name: string): TextEnvironment {
  const [family, size] = name.split(/-(.*)/s) as [string, string];
  if (family === 'household' && Object.hasOwn(HOUSEHOLD_SIZES, size))
    return householdEnvironment(size as HouseholdSizeName);
  if (family === 'sokoban' && Object.hasOwn(SOKOBAN_SIZES, size))
    return sokobanEnvironment(size as SokobanSizeName);
  if (family === 'errand' && Object.hasOwn(ERRAND_SIZES, size))
    return errandEnvironment(size as ErrandSizeName);
  throw new Error(
    `unknown environment ${JSON.stringify(name)}; one of ${ENVIRONMENT_NAMES.join(', ')}`,
  );
}
