import type { Outcome } from './rollout-batch';

/** A trajectory's outcome: as given, else success iff its (undiscounted) return is > 0. */
export function resolveOutcome(given: Outcome | undefined, episodeReturn: number): Outcome {
  return given ?? (episodeReturn > 0 ? 'success' : 'failure');
}
