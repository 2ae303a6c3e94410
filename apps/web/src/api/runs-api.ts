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
  const sorted = caps.has('Query.runs') && caps.hasType('RunSort') && q.sort;
  // Older servers have no last-success fields: the page's runs bring their iterations instead.
  const lastFields = caps.has('Run.lastTrainingSuccess') && caps.has('Run.lastEvaluationSuccess');
  const extra = lastFields
    ? 'lastTrainingSuccess lastEvaluationSuccess'
    : 'iterations { metrics evaluationSuccessRate }';
  const total = caps.has('RunConnection.totalCount') ? 'totalCount' : '';
  const count = caps.has('Run.iterationCount') ? 'iterationCount' : '';
  const query = `query Runs($filter: RunFilter, $first: Int, $after: String${sorted ? ', $sort: RunSort' : ''}) {
    runs(filter: $filter, first: $first, after: $after${sorted ? ', sort: $sort' : ''}) {
      nodes { id name project env method status lastIteration ${count} createdAt tags parentRunId ${extra} }
      pageInfo { endCursor hasNextPage } ${total}
    }
  }`;
  const vars = {
    filter,
    first: q.first,
    after: q.after ?? null,
    ...(sorted ? { sort: q.sort } : {}),
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
