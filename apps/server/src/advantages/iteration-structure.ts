import type pg from 'pg';

export interface TrajectoryShape {
  /** Database id of the trajectory (the steps table's key). */
  dbId: string;
  groupId: string;
  trajectoryId: string;
  length: number;
  /** Index of its first step in the iteration's canonical order. */
  offset: number;
}

/** The groups and trajectories of one iteration in canonical order, with where each starts. */
export async function iterationStructure(
  pool: pg.Pool,
  runId: string,
  iteration: number,
): Promise<TrajectoryShape[]> {
  const res = await pool.query<{
    id: string;
    group_id: string;
    trajectory_id: string;
    length: number;
  }>(
    `SELECT t.id, g.key AS group_id, t.key AS trajectory_id, t.step_count AS length
     FROM trajectories t JOIN rollout_groups g ON g.id = t.group_id
     WHERE t.run_id = $1 AND t.iteration = $2 ORDER BY g.ord, t.ord`,
    [runId, iteration],
  );
  let offset = 0;
  return res.rows.map((r) => {
    const shape = {
      dbId: r.id,
      groupId: r.group_id,
      trajectoryId: r.trajectory_id,
      length: r.length,
      offset,
    };
    offset += r.length;
    return shape;
  });
}
