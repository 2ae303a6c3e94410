import type { Outcome } from '@creditlab/estimators';

/** Where one trajectory's steps sit in its iteration's canonical order. */
export interface TrajectoryShape {
  groupId: string;
  trajectoryId: string;
  groupOrd: number;
  trajOrd: number;
  outcome: Outcome;
  length: number;
  /** Index of its first step in the iteration's canonical order. */
  offset: number;
}
