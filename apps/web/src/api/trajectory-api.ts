import type { Capabilities } from './capabilities';
import { gql } from './graphql';
import type { Json, MethodInput } from './types';

export interface TrajectoryStep {
  index: number;
  state: string;
  action: string;
  reward: number;
  extra: Record<string, Json> | null;
  /** One per chosen method, in order. */
  advantages: number[];
  diagnostics: (Record<string, Json> | null)[];
}

export interface TrajectoryView {
  id: string;
  outcome: string;
  return: number;
  length: number;
  steps: TrajectoryStep[];
}

export interface GroupView {
  id: string;
  iteration: number;
  position: number;
  trajectories: TrajectoryView[];
}

type RawStep = Omit<TrajectoryStep, 'advantages' | 'diagnostics'> & Record<string, Json>;
type RawGroup = Omit<GroupView, 'trajectories'> & {
  trajectories: (Omit<TrajectoryView, 'steps'> & { steps: RawStep[] })[];
};

/** A task group's G trajectories with each chosen method's advantage and diagnostics per step. */
export async function fetchGroup(
  caps: Capabilities,
  runId: string,
  iteration: number,
  groupId: string,
  methods: MethodInput[],
): Promise<GroupView | null> {
  const vars = methods.map((_, i) => `$m${i}: MethodInput!`).join(', ');
  const perMethod = methods
    .map((_, i) => `a${i}: advantage(method: $m${i}) d${i}: diagnostics(method: $m${i})`)
    .join(' ');
  const body = `id iteration position trajectories { id outcome return length steps { index state action reward extra ${perMethod} } }`;
  const args = Object.fromEntries(methods.map((m, i) => [`m${i}`, m]));
  const raw = caps.has('Run.group')
    ? await byId(runId, iteration, groupId, vars, body, args)
    : await byPaging(runId, iteration, groupId, vars, body, args);
  if (!raw) return null;
  return {
    ...raw,
    trajectories: raw.trajectories.map((t) => ({
      ...t,
      steps: t.steps.map((s) => ({
        index: s.index,
        state: s.state,
        action: s.action,
        reward: s.reward,
        extra: (s.extra ?? null) as Record<string, Json> | null,
        advantages: methods.map((_, i) => s[`a${i}`] as number),
        diagnostics: methods.map((_, i) => (s[`d${i}`] ?? null) as Record<string, Json> | null),
      })),
    })),
  };
}

async function byId(
  runId: string,
  iteration: number,
  groupId: string,
  vars: string,
  body: string,
  args: Record<string, unknown>,
): Promise<RawGroup | null> {
  const query = `query Group($runId: ID!, $iteration: Int!, $groupId: String!${vars ? `, ${vars}` : ''}) {
    run(id: $runId) { group(iteration: $iteration, id: $groupId) { ${body} } } }`;
  const answer = await gql<{ run: { group: RawGroup | null } | null }>(query, {
    runId,
    iteration,
    groupId,
    ...args,
  });
  return answer.run?.group ?? null;
}

/**
 * Servers without `Run.group`: page through the iteration's group ids 20 at a time, then read the
 * page up to the group (small pages keep the query under the server's cost limit).
 */
async function byPaging(
  runId: string,
  iteration: number,
  groupId: string,
  vars: string,
  body: string,
  args: Record<string, unknown>,
): Promise<RawGroup | null> {
  let after: string | null = null;
  for (;;) {
    type Ids = {
      nodes: { id: string }[];
      pageInfo: { endCursor: string | null; hasNextPage: boolean };
    };
    const ids: Ids | undefined = (
      await gql<{ run: { groups: Ids } | null }>(
        `query Ids($runId: ID!, $iteration: Int!, $after: String) { run(id: $runId) { groups(iteration: $iteration, first: 20, after: $after) { nodes { id } pageInfo { endCursor hasNextPage } } } }`,
        { runId, iteration, after },
      )
    ).run?.groups;
    if (!ids) return null;
    const at = ids.nodes.findIndex((n) => n.id === groupId);
    if (at >= 0) {
      const query = `query Groups($runId: ID!, $iteration: Int!, $after: String, $first: Int${vars ? `, ${vars}` : ''}) {
        run(id: $runId) { groups(iteration: $iteration, first: $first, after: $after) { nodes { ${body} } } } }`;
      const page = await gql<{ run: { groups: { nodes: RawGroup[] } } }>(query, {
        runId,
        iteration,
        after,
        first: at + 1,
        ...args,
      });
      return page.run.groups.nodes.find((g) => g.id === groupId) ?? null;
    }
    if (!ids.pageInfo.hasNextPage) return null;
    after = ids.pageInfo.endCursor;
  }
}

/** A group of an iteration as the picker lists it: its id and how its trajectories ended. */
export interface GroupOutline {
  id: string;
  trajectories: number;
  successes: number;
}

/** Groups listed at most (a page of 100 at a time): an iteration of thousands of tasks is paged this far. */
export const MAX_LISTED_GROUPS = 2000;

/** The groups of an iteration in canonical order, with their outcomes, for picking one. */
export async function fetchGroupOutlines(
  runId: string,
  iteration: number,
): Promise<{ groups: GroupOutline[]; more: boolean }> {
  const groups: GroupOutline[] = [];
  let after: string | null = null;
  for (;;) {
    const answer: {
      run: {
        groups: {
          nodes: { id: string; trajectories: { outcome: string }[] }[];
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
        };
      } | null;
    } = await gql(
      `query G($runId: ID!, $iteration: Int!, $after: String) { run(id: $runId) { groups(iteration: $iteration, first: 100, after: $after) { nodes { id trajectories { outcome } } pageInfo { hasNextPage endCursor } } } }`,
      { runId, iteration, after },
    );
    const page = answer.run?.groups;
    if (!page) return { groups, more: false };
    for (const g of page.nodes)
      groups.push({
        id: g.id,
        trajectories: g.trajectories.length,
        successes: g.trajectories.filter((t) => t.outcome.toUpperCase() === 'SUCCESS').length,
      });
    if (!page.pageInfo.hasNextPage) return { groups, more: false };
    if (groups.length >= MAX_LISTED_GROUPS) return { groups, more: true };
    after = page.pageInfo.endCursor;
  }
}

/**
 * The group a page opens when its address names none: the first whose trajectories ended differently
 * (some succeeded, some not), since a group all of one outcome gets no credit from the group-relative
 * methods and shows zeros; the first group when every group is of one outcome.
 */
export function firstMixedGroup(groups: GroupOutline[]): string | undefined {
  return (groups.find(isMixedGroup) ?? groups[0])?.id;
}

/** Some of the group's trajectories succeeded and some did not. */
export function isMixedGroup(g: GroupOutline | undefined): boolean {
  return !!g && g.successes > 0 && g.successes < g.trajectories;
}
