/** Where a method's credit points against its trajectory's outcome. */
export interface OutcomeCredit {
  /** Steps of failed (not successful) trajectories with a positive advantage. */
  goodInFailed: number;
  /** Steps of successful trajectories with a negative advantage. */
  badInSucceeded: number;
  stepsInFailed: number;
  stepsInSucceeded: number;
}

/**
 * Credit against the episode, defined by the trajectory's outcome (success or not): a step-level
 * method should sometimes credit a good step of a failed episode, or blame a bad step of a
 * successful one; an episode-level method never does.
 */
export function outcomeCredit(
  advantages: ArrayLike<number>,
  succeeded: ArrayLike<number>,
): OutcomeCredit {
  const out = { goodInFailed: 0, badInSucceeded: 0, stepsInFailed: 0, stepsInSucceeded: 0 };
  for (let k = 0; k < advantages.length; k++) {
    const a = advantages[k] as number;
    if (succeeded[k]) {
      out.stepsInSucceeded++;
      if (a < 0) out.badInSucceeded++;
    } else {
      out.stepsInFailed++;
      if (a > 0) out.goodInFailed++;
    }
  }
  return out;
}
