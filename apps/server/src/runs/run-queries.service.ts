import { Injectable } from '@nestjs/common';
import { seesProject, type Principal } from '../access/principal';
import type { Reader } from '../database/database';
import { isUuid, uuidPrefixRange } from '../database/uuid';
import { decodeCursor, encodeCursor, pageSize, RUN_CURSOR, toPage } from '../graphql/pagination';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { RunSort } from '../graphql/enums';
import { EVALUATION_SUCCESS } from '../rollouts/iteration-tally';
import type { Run, RunConnection, RunFilter, RunSeries, SeriesPoint } from './run.models';

import type { RunRow } from './run-loaders';
import { METRIC_RUN_CURSOR, pageByMetric, type MetricOrder } from './runs-by-metric';

/** A sort as the API spells it (METRIC_DESC). */
const sortName = (sort: RunSort) => sort.toUpperCase().replace(/-/g, '_');

/** The orders by a metric's last value, each with whether it is highest first. */
const METRIC_SORTS = { 'metric-desc': true, 'metric-asc': false } as const;
const isMetricSort = (sort: RunSort): sort is keyof typeof METRIC_SORTS => sort in METRIC_SORTS;

/** Each other sort order, with the id last so that the order is total (keyset cursors need it). */
const ORDER: Record<Exclude<RunSort, keyof typeof METRIC_SORTS>, object[]> = {
  'created-desc': [{ createdAt: 'desc' }, { id: 'desc' }],
  'created-asc': [{ createdAt: 'asc' }, { id: 'asc' }],
  'name-asc': [{ name: 'asc' }, { id: 'asc' }],
  'last-iteration-desc': [{ lastIteration: { sort: 'desc', nulls: 'last' } }, { id: 'desc' }],
};

const projectOf = (caller: Principal) =>
  caller.project === null ? {} : { project: caller.project };

function runWhere(caller: Principal, f: RunFilter | undefined): Record<string, unknown> {
  // A field given as null filters nothing, as if left out (Prisma takes null as "IS NULL").
  return {
    project: caller.project ?? f?.project ?? undefined,
    env: f?.env ?? undefined,
    method: f?.methods?.length ? { in: f.methods } : (f?.method ?? undefined),
    ...(f?.status?.length ? { status: { in: f.status } } : {}),
    ...(f?.tags?.length ? { tags: { hasEvery: f.tags } } : {}),
    ...(f?.nameContains
      ? { name: { contains: likeLiteral(f.nameContains), mode: 'insensitive' } }
      : {}),
    ...(f?.createdAfter || f?.createdBefore
      ? { createdAt: { gte: f.createdAfter ?? undefined, lt: f.createdBefore ?? undefined } }
      : {}),
    ...(f?.parentRunId ? { parentRunId: isUuid(f.parentRunId) ? f.parentRunId : NO_RUN } : {}),
    ...(f?.idPrefix ? { id: idRange(f.idPrefix) } : {}),
  };
}

function idRange(prefix: string): { gte: string; lte: string } {
  const range = uuidPrefixRange(prefix);
  if (!range)
    throw new DomainError(
      ErrorCode.InvalidInput,
      `runs: idPrefix must be the start of a run id (at most 32 hex digits, hyphens allowed), got ${JSON.stringify(prefix.slice(0, 80))}`,
    );
  return range;
}

/**
 * Text matched as written: Prisma hands `contains` to ILIKE as it is, where %, _ and \ are
 * wildcards and the escape character (PostgreSQL's default escape is the backslash).
 */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, '\\$&');

/** A uuid no run has: a malformed id in a filter matches nothing. */
const NO_RUN = '00000000-0000-0000-0000-000000000000';

/**
 * Reading runs, always within the projects the caller sees, from where the GraphQL operation reads
 * (`reader`: the read replica for a query when there is one, else the primary; Database.readerFor).
 */
@Injectable()
export class RunQueries {
  /** Runs in `sort` order, filtered, a page after `after` (first ≤ 100), and how many match. */
  async list(
    db: Reader,
    caller: Principal,
    filter: RunFilter | undefined,
    sort: RunSort,
    first: number | undefined,
    after: string | undefined,
    sortMetric?: string,
  ): Promise<RunConnection> {
    const limit = pageSize(first, 20, 100, 'runs');
    if (sortMetric !== undefined && sortMetric.trim() === '')
      throw new DomainError(
        ErrorCode.InvalidInput,
        'runs: sortMetric is empty; name a metric the runs log, e.g. "successRate"',
      );
    if (isMetricSort(sort) === (sortMetric === undefined))
      throw new DomainError(
        ErrorCode.InvalidInput,
        sortMetric !== undefined
          ? `runs: sortMetric goes with sort METRIC_DESC or METRIC_ASC, not ${sortName(sort)}`
          : `runs: sort ${sortName(sort)} needs sortMetric, the metric to sort by (e.g. "successRate")`,
      );
    // A key confined to a project filtering on another one sees nothing, as if that project were empty.
    if (filter?.project && !seesProject(caller, filter.project))
      return {
        nodes: [],
        pageInfo: { hasNextPage: false, endCursor: null },
        countMatching: () => Promise.resolve(0),
      };
    const where = runWhere(caller, filter);
    if (isMetricSort(sort))
      return this.listByMetric(
        db,
        where,
        sort,
        { metric: sortMetric!, descending: METRIC_SORTS[sort] },
        limit,
        after,
      );
    const cursor = after ? decodeCursor(after, 'runs', RUN_CURSOR) : undefined;
    if (cursor && cursor[1] !== sort)
      throw new DomainError(
        ErrorCode.InvalidInput,
        'runs: "after" is a cursor of another sort order',
      );
    const rows = await db.prisma.run.findMany({
      where,
      orderBy: ORDER[sort],
      take: limit + 1,
      ...(cursor ? { cursor: { id: cursor[0] }, skip: 1 } : {}),
    });
    const page = toPage(rows, limit, (r) => encodeCursor([r.id, sort]));
    return {
      ...page,
      nodes: page.nodes.map(toRun),
      countMatching: () => db.prisma.run.count({ where }),
    };
  }

  /**
   * A page of the runs matching `where` by the last value of a metric. The filter picks the runs'
   * ids (Prisma, as for every other order); the order and the cursor are SQL over those ids.
   */
  private async listByMetric(
    db: Reader,
    where: Record<string, unknown>,
    sort: RunSort,
    order: MetricOrder,
    limit: number,
    after: string | undefined,
  ): Promise<RunConnection> {
    const cursor = after ? decodeCursor(after, 'runs', METRIC_RUN_CURSOR) : undefined;
    if (cursor && (cursor[1] !== sort || cursor[2] !== order.metric))
      throw new DomainError(
        ErrorCode.InvalidInput,
        'runs: "after" is a cursor of another sort order or sortMetric',
      );
    const ids = (await db.prisma.run.findMany({ where, select: { id: true } })).map((r) => r.id);
    const ordered = await pageByMetric(
      db.pool,
      ids,
      order,
      cursor && { id: cursor[0], value: cursor[3], created: cursor[4] },
      limit + 1,
    ).catch((e: unknown) => {
      // A time of the right form that is no time (February 31st): PostgreSQL's data exception.
      if (cursor && /^22/.test(String((e as { code?: unknown }).code)))
        throw new DomainError(
          ErrorCode.InvalidInput,
          'runs: "after" is not a cursor this API issued',
        );
      throw e;
    });
    const rows = await db.prisma.run.findMany({
      where: { id: { in: ordered.map((r) => r.id) } },
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    const page = toPage(
      ordered.filter((r) => byId.has(r.id)),
      limit,
      (r) => encodeCursor([r.id, sort, order.metric, r.value, r.created]),
    );
    return {
      pageInfo: page.pageInfo,
      nodes: page.nodes.map((r) => toRun(byId.get(r.id)!)),
      countMatching: () => Promise.resolve(ids.length),
    };
  }

  /**
   * Every metric of each run the caller sees among `runIds`, as series over iterations (held-out
   * success as `evaluation.successRate`); only `names` if given. Runs it cannot see are left out.
   */
  async metricSeries(
    db: Reader,
    caller: Principal,
    runIds: string[],
    names?: string[],
  ): Promise<RunSeries[]> {
    if (runIds.length > 20)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `runIds: at most 20 runs, got ${runIds.length}`,
      );
    const runs = await db.prisma.run.findMany({
      where: { id: { in: runIds.filter(isUuid) }, ...projectOf(caller) },
      select: { id: true, name: true },
    });
    const res = await db.pool.query<{
      run_id: string;
      iteration: number;
      metrics: Record<string, number>;
      evaluation_success_rate: number | null;
    }>(
      `SELECT run_id, iteration, metrics, evaluation_success_rate FROM iterations
       WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, iteration`,
      [runs.map((r) => r.id)],
    );
    const wanted = names?.length ? new Set(names) : undefined;
    return runIds.flatMap((id) => {
      const run = runs.find((r) => r.id === id);
      if (!run) return [];
      const series = new Map<string, SeriesPoint[]>();
      const add = (name: string, iteration: number, value: number) => {
        if (wanted && !wanted.has(name)) return;
        const points = series.get(name) ?? [];
        points.push({ iteration, value });
        series.set(name, points);
      };
      for (const row of res.rows) {
        if (row.run_id !== id) continue;
        for (const [name, value] of Object.entries(row.metrics)) add(name, row.iteration, value);
        if (row.evaluation_success_rate !== null)
          add(EVALUATION_SUCCESS, row.iteration, row.evaluation_success_rate);
      }
      return [
        {
          runId: id,
          runName: run.name,
          series: [...series.entries()]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([name, points]) => ({ name, points })),
        },
      ];
    });
  }

  /** A run the caller sees, or null (absent and another project's look the same). */
  async get(db: Reader, caller: Principal, id: string): Promise<Run | null> {
    if (!isUuid(id)) return null;
    const row = await db.prisma.run.findUnique({ where: { id } });
    return row && seesProject(caller, row.project) ? toRun(row) : null;
  }
}

/** A run's row as the API shows it. */
export function toRun(r: RunRow): Run {
  return {
    id: r.id,
    name: r.name,
    project: r.project,
    env: r.env,
    method: r.method,
    params: r.params,
    config: r.config,
    seed: r.seed === null ? null : Number(r.seed),
    tags: r.tags,
    status: r.status as Run['status'],
    lastSeq: Number(r.lastSeq),
    lastIteration: r.lastIteration,
    parentRunId: r.parentRunId,
    forkIteration: r.forkIteration,
    createdAt: r.createdAt,
    finishedAt: r.finishedAt,
    summary: r.summary,
  };
}
