import type { Capabilities } from './capabilities';
import { gql } from './graphql';
import type { Iteration, Page, RunRow } from './types';

export interface RunQuery {
  project?: string;
  env?: string;
  method?: string;
  status?: string;
  tags?: string[];
  nameContains?: string;
  sort?: string;
  first: number;
  after?: string | null;
}

export const RUN_SORTS = ['CREATED_DESC', 'CREATED_ASC', 'NAME_ASC', 'LAST_ITERATION_DESC'];
/** The app's sorts by a metric's last value: the server's METRIC_DESC with the metric. */
export const METRIC_SORTS: Record<string, string> = {
  TRAINING_SUCCESS_DESC: 'successRate',
  HELD_OUT_SUCCESS_DESC: 'evaluation.successRate',
};

/** The sorts this server offers (the metric ones since METRIC_DESC). */
export function runSorts(caps: Capabilities | undefined): string[] {
  return caps?.has('RunSort.METRIC_DESC')
    ? [...RUN_SORTS, ...Object.keys(METRIC_SORTS)]
    : RUN_SORTS;
}
export const RUN_STATUSES = ['running', 'completed', 'failed', 'aborted'];

/** The runs page: one page of runs under the filters (only those the server knows are sent). */
export async function fetchRuns(caps: Capabilities, q: RunQuery): Promise<Page<RunRow>> {
  const filter: Record<string, unknown> = {};
  if (q.project) filter.project = q.project;
  if (q.env) filter.env = q.env;
  if (q.method) filter.method = q.method;
  if (q.tags?.length) filter.tags = q.tags;
  if (q.status) filter.status = caps.hasType('RunStatus') ? [q.status.toUpperCase()] : q.status;
  if (q.nameContains && caps.has('RunFilter.nameContains')) filter.nameContains = q.nameContains;
  // A sort the app does not offer (an address typed by hand) is left out: the server's default.
  const known = q.sort && runSorts(caps).includes(q.sort) ? q.sort : undefined;
  const metric = known && Object.hasOwn(METRIC_SORTS, known) ? METRIC_SORTS[known] : undefined;
  const sort = metric ? 'METRIC_DESC' : known;
  const sorted = caps.has('Query.runs') && caps.hasType('RunSort') && sort;
  // Older servers have no last-success fields: the page's runs bring their iterations instead.
  const lastFields = caps.has('Run.lastTrainingSuccess') && caps.has('Run.lastEvaluationSuccess');
  const extra = lastFields
    ? 'lastTrainingSuccess lastEvaluationSuccess'
    : 'iterations { metrics evaluationSuccessRate }';
  const total = caps.has('RunConnection.totalCount') ? 'totalCount' : '';
  const count = caps.has('Run.iterationCount') ? 'iterationCount' : '';
  const query = `query Runs($filter: RunFilter, $first: Int, $after: String${sorted ? ', $sort: RunSort' : ''}${metric ? ', $sortMetric: String' : ''}) {
    runs(filter: $filter, first: $first, after: $after${sorted ? ', sort: $sort' : ''}${metric ? ', sortMetric: $sortMetric' : ''}) {
      nodes { id name project env method status lastIteration ${count} createdAt tags parentRunId ${extra} }
      pageInfo { endCursor hasNextPage } ${total}
    }
  }`;
  const vars = {
    filter,
    first: q.first,
    after: q.after ?? null,
    ...(sorted ? { sort } : {}),
    ...(metric ? { sortMetric: metric } : {}),
  };
  const page = (
    await gql<{
      runs: Page<RunRow & { iterations?: Pick<Iteration, 'metrics' | 'evaluationSuccessRate'>[] }>;
    }>(query, vars)
  ).runs;
  if (lastFields) return page;
  return {
    ...page,
    nodes: page.nodes.map(({ iterations, ...run }) => ({
      ...run,
      ...lastSuccess(iterations ?? []),
    })),
  };
}

function lastSuccess(iterations: Pick<Iteration, 'metrics' | 'evaluationSuccessRate'>[]) {
  const train = iterations.map((i) => i.metrics?.successRate).filter((v) => typeof v === 'number');
  const held = iterations.map((i) => i.evaluationSuccessRate).filter((v) => typeof v === 'number');
  return { lastTrainingSuccess: train.at(-1) ?? null, lastEvaluationSuccess: held.at(-1) ?? null };
}
