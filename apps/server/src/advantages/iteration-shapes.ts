import type { Outcome } from '@creditlab/estimators';
import type pg from 'pg';
import { PACKED_FORMAT, unpackShape, type PackedIteration } from './packed-columns';
import { canonicalShape, type TrajectoryShape } from './trajectory-shape';

/** An iteration's log position and shape, as the first round trip of a read finds them. */
export interface IterationHead {
  iteration: number;
  /** Seq of the last event that changed the iteration's steps or outcomes: what the data reflects. */
  inputsSeq: number;
  stepCount: number;
  shape: TrajectoryShape[];
  /** Whether iteration_columns holds it packed at that very position (see packed-columns.ts). */
  packed: boolean;
}

export const iterationList = (runId: string, iterations: number[], table = '') =>
  `${table}run_id = '${runId}' AND ${table}iteration = ANY('{${iterations.join(',')}}'::int[])`;

type HeadRow = { iteration: number; inputs_seq: string; shape: PackedIteration['shape'] | null };
type TrajectoryRow = {
  iteration: number;
  key: string;
  group_ord: number;
  ord: number;
  outcome: Outcome;
  step_count: number;
};
type GroupRow = { iteration: number; ord: number; key: string };

/** Statements: how many results `shapesQuery` yields. */
export const SHAPE_STATEMENTS = 3;

/**
 * Each iteration's log position and trajectories, in three statements of one round trip
 * (metrics-only iterations left out): the iterations, with the shape of their packed row when one
 * reflects their current position (`usePacked`; a row of another position or format is not looked
 * at); then the trajectories and the group keys of the others, each in its primary key's order.
 * Group keys come apart from the trajectories: joined per trajectory, the planner (without
 * statistics yet) looks each group up through the wrong index.
 */
export function shapesQuery(runId: string, iterations: number[], usePacked: boolean): string {
  const fresh = `c.run_id = it.run_id AND c.iteration = it.iteration AND c.inputs_seq = it.inputs_seq
                 AND c.format = ${PACKED_FORMAT}`;
  // The iterations read from their trajectories, then each one's rows through its primary key.
  const unpacked = (select: string, table: string, order: string) =>
    `SELECT x.* FROM iterations it CROSS JOIN LATERAL (
       SELECT ${select} FROM ${table} x WHERE x.run_id = it.run_id AND x.iteration = it.iteration
       ORDER BY ${order}) x
     WHERE ${iterationList(runId, iterations, 'it.')} AND it.inputs_seq IS NOT NULL
       AND NOT (${usePacked} AND EXISTS (SELECT 1 FROM iteration_columns c WHERE ${fresh}))
     ORDER BY it.iteration, ${order}`;
  return `SELECT it.iteration, it.inputs_seq, c.shape
          FROM iterations it LEFT JOIN iteration_columns c ON ${usePacked} AND ${fresh}
          WHERE ${iterationList(runId, iterations, 'it.')} AND it.inputs_seq IS NOT NULL
          ORDER BY it.iteration;
          ${unpacked('x.iteration, x.key, x.group_ord, x.ord, x.outcome, x.step_count', 'trajectories', 'x.group_ord, x.ord')};
          ${unpacked('x.iteration, x.ord, x.key', 'rollout_groups', 'x.ord')}`;
}

/** The iterations from the results of `shapesQuery`, by iteration. */
export function shapesFrom(results: pg.QueryResult[]): Map<number, IterationHead> {
  const [heads, trajectories, groups] = results as [
    pg.QueryResult<HeadRow>,
    pg.QueryResult<TrajectoryRow>,
    pg.QueryResult<GroupRow>,
  ];
  const out = new Map<number, IterationHead>();
  for (const r of heads.rows) {
    const shape = r.shape ? unpackShape(r.shape) : [];
    out.set(r.iteration, {
      iteration: r.iteration,
      inputsSeq: Number(r.inputs_seq),
      stepCount: shape.reduce((sum, t) => sum + t.length, 0),
      shape,
      packed: r.shape !== null,
    });
  }
  const groupKeys = new Map(groups.rows.map((g) => [`${g.iteration}/${g.ord}`, g.key]));
  const unpacked = new Map<number, Omit<TrajectoryShape, 'offset'>[]>();
  for (const r of trajectories.rows) {
    let list = unpacked.get(r.iteration);
    if (!list) unpacked.set(r.iteration, (list = []));
    list.push({
      groupId: groupKeys.get(`${r.iteration}/${r.group_ord}`) as string,
      trajectoryId: r.key,
      groupOrd: r.group_ord,
      trajOrd: r.ord,
      outcome: r.outcome,
      length: r.step_count,
    });
  }
  for (const [iteration, list] of unpacked) {
    const it = out.get(iteration) as IterationHead;
    it.shape = canonicalShape(list);
    it.stepCount = it.shape.reduce((sum, t) => sum + t.length, 0);
  }
  return out;
}
