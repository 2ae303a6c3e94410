import { gql } from './test-server';

export const GROUPS_QUERY = `
  query Groups($id: ID!, $iteration: Int!, $after: String) {
    run(id: $id) {
      groups(iteration: $iteration, first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id trajectories { id outcome outcomeGiven return length steps {
          index state action reward nll tokenLogprobs embedding value nextState nextValue extra } } }
      }
    }
  }`;

export interface ReadStep {
  index: number;
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  tokenLogprobs: number[] | null;
  embedding: number[] | null;
  value: number | null;
  nextState: string | null;
  nextValue: number | null;
  extra: Record<string, unknown> | null;
}
export interface ReadGroup {
  id: string;
  trajectories: {
    id: string;
    outcome: string;
    outcomeGiven: boolean;
    return: number;
    length: number;
    steps: ReadStep[];
  }[];
}

/** All task groups of one iteration of a run, read back through GraphQL page by page. */
export async function readIteration(
  server: { url: string },
  runId: string,
  iteration: number,
): Promise<ReadGroup[]> {
  const groups: ReadGroup[] = [];
  let after: string | null = null;
  for (;;) {
    type Page = { pageInfo: { hasNextPage: boolean; endCursor: string }; nodes: ReadGroup[] };
    const res: { data?: { run: { groups: Page } }; errors?: unknown[] } = await gql<{
      run: { groups: Page };
    }>(server, GROUPS_QUERY, { id: runId, iteration, after });
    if (res.errors) throw new Error(JSON.stringify(res.errors));
    const page: Page = res.data!.run.groups;
    // The API's outcome enum (SUCCESS) as rollout-batch/v1's word (success), to compare with batches.
    for (const g of page.nodes) for (const t of g.trajectories) t.outcome = t.outcome.toLowerCase();
    groups.push(...page.nodes);
    if (!page.pageInfo.hasNextPage) return groups;
    after = page.pageInfo.endCursor;
  }
}
