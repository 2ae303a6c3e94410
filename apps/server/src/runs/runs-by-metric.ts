import type pg from 'pg';
import { z } from 'zod';

/**
 * Where a page ordered by a metric ended: the last run's id, the sort, the metric, its value and its
 * creation time as PostgreSQL writes it (microseconds, which a JavaScript Date would cut).
 */
export const METRIC_RUN_CURSOR = z.tuple([
  z.uuid(),
  z.string(),
  z.string(),
  z.number().nullable(),
  z.string().regex(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d)?$/),
]);

/** A run's place in the order. */
export interface MetricPlace {
  id: string;
  value: number | null;
  created: string;
}

export interface MetricOrder {
  metric: string;
  descending: boolean;
}

/**
 * A page of runs among `ids` ordered by the last value each logged of a metric (its row in the
 * run_metrics projection: one primary-key lookup per run, whatever the name), runs that never
 * logged it last; runs tied on it (success saturating at 1, or none logged) newest first, then by
 * id; after the cursor's place when given.
 */
export async function pageByMetric(
  pool: pg.Pool,
  ids: string[],
  order: MetricOrder,
  after: MetricPlace | undefined,
  limit: number,
): Promise<MetricPlace[]> {
  const params: unknown[] = [ids, order.metric];
  const param = (v: unknown, type: string) => (params.push(v), `$${params.length}::${type}`);
  const dir = order.descending ? 'DESC' : 'ASC';
  let past = '';
  if (after) {
    // Past the cursor: a later value, or the same value and an older run; no value comes after all.
    const [created, id] = [param(after.created, 'timestamptz'), param(after.id, 'uuid')];
    const older = `(v.created_at < ${created} OR (v.created_at = ${created} AND v.id < ${id}))`;
    if (after.value === null) past = `WHERE v.value IS NULL AND ${older}`;
    else {
      const value = param(after.value, 'float8');
      const beyond = order.descending ? '<' : '>';
      past = `WHERE v.value IS NULL OR v.value ${beyond} ${value} OR (v.value = ${value} AND ${older})`;
    }
  }
  const res = await pool.query<MetricPlace>(
    `SELECT v.id, v.value, v.created_at::text AS created FROM (
       SELECT r.id, r.created_at, m.value FROM runs r
       LEFT JOIN run_metrics m ON m.run_id = r.id AND m.name = $2::text
       WHERE r.id = ANY($1::uuid[])) v
     ${past}
     ORDER BY v.value ${dir} NULLS LAST, v.created_at DESC, v.id DESC
     LIMIT ${param(limit, 'int')}`,
    params,
  );
  return res.rows;
}
