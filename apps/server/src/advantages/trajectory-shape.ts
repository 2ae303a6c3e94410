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

/** Canonical order of trajectories (or of anything placed by group and trajectory order). */
export const byCanonicalPlace = (
  a: { groupOrd: number; trajOrd: number },
  b: { groupOrd: number; trajOrd: number },
): number => a.groupOrd - b.groupOrd || a.trajOrd - b.trajOrd;

/**
 * An iteration's trajectories in canonical order (by group, then by place in the group; both in
 * order of first appearance), each with the offset of its first step. The one statement of that
 * rule: the readers (from stored rows) and packing in hand (from an append's memory) both use it,
 * so a packed row and the step slices it stands for agree on where every step sits.
 */
export function canonicalShape(trajectories: Omit<TrajectoryShape, 'offset'>[]): TrajectoryShape[] {
  const sorted = [...trajectories].sort(byCanonicalPlace);
  let offset = 0;
  return sorted.map((t) => {
    const shape = { ...t, offset };
    offset += t.length;
    return shape;
  });
}
