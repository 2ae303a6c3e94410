import type pg from 'pg';
import { z } from 'zod';

/** The name under which held-out success is read, as in `metricSeries`. */
export const EVALUATION_SUCCESS = 'evaluation.successRate';

/** Where a page ordered by a metric ended: the last run's id, the sort, the metric and its value. */
export const METRIC_RUN_CURSOR = z.tuple([z.uuid(), z.string(), z.string(), z.number().nullable()]);
export type MetricRunCursor = z.infer<typeof METRIC_RUN_CURSOR>;

export interface MetricOrder {
  metric: string;
  descending: boolean;
}

/**
 * A page of runs among `ids` ordered by the last value each logged of a metric (W&B's run summary),
 * runs that never logged it last, the id breaking ties; after the cursor's (value, id) when given.
 * The value is the one of the run's highest iteration that holds the metric, found through the
 * iterations' primary key, so the cost is a short index walk per matching run.
 */
export async function pageByMetric(
  pool: pg.Pool,
  ids: string[],
  order: MetricOrder,
  after: { id: string; value: number | null } | undefined,
  limit: number,
): Promise<{ id: string; value: number | null }[]> {
  const params: unknown[] = [ids];
  const param = (v: unknown, type: string) => (params.push(v), `$${params.length}::${type}`);
  const value =
    order.metric === EVALUATION_SUCCESS
      ? `(SELECT evaluation_success_rate FROM iterations i
          WHERE i.run_id = r.id AND evaluation_success_rate IS NOT NULL ORDER BY iteration DESC LIMIT 1)`
      : `(SELECT (metrics->>${param(order.metric, 'text')})::float8 FROM iterations i
          WHERE i.run_id = r.id AND metrics ? $2::text ORDER BY iteration DESC LIMIT 1)`;
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
       SELECT r.id, ${value} AS value FROM unnest($1::uuid[]) AS r(id)) v
     ${past}
     ORDER BY v.value ${dir} NULLS LAST, v.id ${dir}
     LIMIT ${param(limit, 'int')}`,
    params,
  );
  return res.rows;
}
