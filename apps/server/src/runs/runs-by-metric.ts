import type pg from 'pg';
import { z } from 'zod';

/** Where a page ordered by a metric ended: the last run's id, the sort, the metric and its value. */
export const METRIC_RUN_CURSOR = z.tuple([z.uuid(), z.string(), z.string(), z.number().nullable()]);

export interface MetricOrder {
  metric: string;
  descending: boolean;
}

/**
 * A page of runs among `ids` ordered by the last value each logged of a metric (its row in the
 * run_metrics projection: one primary-key lookup per run, whatever the name), runs that never
 * logged it last, the id breaking ties; after the cursor's (value, id) when given.
 */
export async function pageByMetric(
  pool: pg.Pool,
  ids: string[],
  order: MetricOrder,
  after: { id: string; value: number | null } | undefined,
  limit: number,
): Promise<{ id: string; value: number | null }[]> {
  const params: unknown[] = [ids, order.metric];
  const param = (v: unknown, type: string) => (params.push(v), `$${params.length}::${type}`);
  const dir = order.descending ? 'DESC' : 'ASC';
  // Past the cursor in this order: (value, id) beyond it; runs without a value come after every value.
  const beyond = order.descending ? '<' : '>';
  let past = '';
  if (after && after.value === null)
    past = `WHERE v.value IS NULL AND v.id ${beyond} ${param(after.id, 'uuid')}`;
  else if (after) {
    const [v, id] = [param(after.value, 'float8'), param(after.id, 'uuid')];
    past = `WHERE v.value IS NULL OR v.value ${beyond} ${v} OR (v.value = ${v} AND v.id ${beyond} ${id})`;
  }
  const res = await pool.query<{ id: string; value: number | null }>(
    `SELECT v.id, v.value FROM (
       SELECT r.id, m.value FROM unnest($1::uuid[]) AS r(id)
       LEFT JOIN run_metrics m ON m.run_id = r.id AND m.name = $2::text) v
     ${past}
     ORDER BY v.value ${dir} NULLS LAST, v.id ${dir}
     LIMIT ${param(limit, 'int')}`,
    params,
  );
  return res.rows;
}
