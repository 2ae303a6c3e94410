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

/** The groups of an iteration (for picking one), first page. */
export async function fetchGroupIds(runId: string, iteration: number): Promise<string[]> {
  const answer = await gql<{ run: { groups: { nodes: { id: string }[] } } | null }>(
    `query G($runId: ID!, $iteration: Int!) { run(id: $runId) { groups(iteration: $iteration, first: 100) { nodes { id } } } }`,
    { runId, iteration },
  );
  return answer.run?.groups.nodes.map((n) => n.id) ?? [];
}
