import { householdEnvironment } from './household/household-environment';
import { HOUSEHOLD_SIZES, type HouseholdSizeName } from './household/household-task';
import { sokobanEnvironment } from './sokoban/sokoban-env';
import { SOKOBAN_SIZES, type SokobanSizeName } from './sokoban/sokoban-level';
import type { TextEnvironment } from './text-environment';

export const ENVIRONMENT_NAMES = [
  ...Object.keys(HOUSEHOLD_SIZES).map((s) => `household-${s}`),
  ...Object.keys(SOKOBAN_SIZES).map((s) => `sokoban-${s}`),
];

/** The environment of a name such as "household-tiny" or "sokoban-small". */
export function textEnvironment(name: string): TextEnvironment {
  const [family, size] = name.split(/-(.*)/s) as [string, string];
  if (family === 'household' && size in HOUSEHOLD_SIZES)
    return householdEnvironment(size as HouseholdSizeName);
  if (family === 'sokoban' && size in SOKOBAN_SIZES)
    return sokobanEnvironment(size as SokobanSizeName);
  throw new Error(
    `unknown environment ${JSON.stringify(name)}; one of ${ENVIRONMENT_NAMES.join(', ')}`,
  );
}
