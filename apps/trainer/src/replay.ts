import type { CreditlabClient } from '@creditlab/client';
import type { TextEnvironment } from '@creditlab/envs';
import type { TrainerConfig } from './config';
import { iterationRandom } from './iteration';
import { trainingTasks, type RolloutStep, type StepRecord, type TaskGroup } from './rollout';
import type { RolloutSource } from './training-loop';

/** A step as GraphQL returns it: absent fields are null, extras are in `extra`. */
interface StoredStep {
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  embedding: number[] | null;
  value: number | null;
  extra: Record<string, unknown> | null;
}

interface StoredGroup {
  id: string;
  trajectories: { id: string; outcome: string; steps: StoredStep[] }[];
}

/**
 * The rollouts a stored run logged, iteration by iteration, replayed in their tasks to rebuild what
 * the store does not keep: the admissible actions of every step. The rollout policy's
 * log-probabilities are the stored NLLs. Each step says which task it was taken in (`taskSeed`, logged
 * by the trainer); a run logged before the trainer recorded it is replayed in the tasks its config and
 * seed drew for that iteration. Rollouts that do not replay (another environment's, or edited) are an
 * error naming the step.
 */
export function replayedRollouts(
  client: CreditlabClient,
  parentRunId: string,
  parent: TrainerConfig,
  env: TextEnvironment,
): RolloutSource {
  return {
    rollouts: async (iteration: number): Promise<TaskGroup[]> => {
      const where = `run ${parentRunId} iteration ${iteration}`;
      const stored = await storedGroups(client, parentRunId, iteration);
      const drawn = () =>
        trainingTasks(
          env,
          parent.tasksPerIteration,
          iterationRandom(parent.seed, iteration, 'train'),
        );
      return stored.map((g, i) => {
        const taskSeed =
          loggedTaskSeed(g, where) ?? drawnTaskSeed(drawn, stored.length, i, g, where);
        return replayGroup(env, g, taskSeed, where);
      });
    },
  };
}

/** The task seed every step of the group logged; undefined if none did (an older run). */
function loggedTaskSeed(g: StoredGroup, where: string): number | undefined {
  const seeds = new Set(g.trajectories.flatMap((t) => t.steps.map((s) => s.extra?.taskSeed)));
  if (seeds.size === 1 && seeds.has(undefined)) return undefined;
  const [seed] = seeds;
  if (seeds.size > 1 || !Number.isInteger(seed))
    throw new Error(
      `${where}, group "${g.id}": its steps do not agree on one integer taskSeed (${[...seeds].map(String).join(', ')})`,
    );
  return seed as number;
}

/** For a run that did not log task seeds: the i-th task its config drew for the iteration. */
function drawnTaskSeed(
  drawn: () => { seed: number }[],
  groups: number,
  i: number,
  g: StoredGroup,
  where: string,
): number {
  const tasks = drawn();
  if (tasks.length !== groups)
    throw new Error(
      `${where}, group "${g.id}": no step says which task it was taken in (taskSeed), and the run's config draws ${tasks.length} tasks for ${groups} stored groups`,
    );
  return tasks[i]!.seed;
}

function replayGroup(
  env: TextEnvironment,
  g: StoredGroup,
  taskSeed: number,
  where: string,
): TaskGroup {
  const task = env.task(taskSeed);
  return {
    id: g.id,
    taskSeed,
    trajectories: g.trajectories.map((t) => {
      let s = env.initialState(task);
      const steps = t.steps.map((st, i): RolloutStep => {
        const actions = env.admissibleActions(task, s);
        const chosen = actions.indexOf(st.action);
        if (chosen < 0)
          throw new Error(
            `${where}, trajectory "${t.id}", step ${i}: action ${JSON.stringify(st.action)} is not admissible in ${env.name} task ${taskSeed}`,
          );
        s = env.step(task, s, st.action).state;
        return { record: recordOf(st), actions, chosen, logProb: -(st.nll ?? 0) };
      });
      // The API's enum (SUCCESS) as the format's word (success).
      const outcome = t.outcome.toLowerCase() as 'success' | 'failure' | 'truncated';
      return { id: t.id, outcome, steps };
    }),
  };
}

/** A stored step as rollout-batch/v1 again, its extras back beside the fields; absent fields left out. */
function recordOf({ extra, ...fields }: StoredStep): StepRecord {
  const present = Object.entries({ ...fields, ...(extra ?? {}) }).filter(([, v]) => v !== null);
  return Object.fromEntries(present) as unknown as StepRecord;
}

async function storedGroups(
  client: CreditlabClient,
  runId: string,
  iteration: number,
): Promise<StoredGroup[]> {
  const groups: StoredGroup[] = [];
  let after: string | null = null;
  for (;;) {
    const page: {
      run: {
        groups: { nodes: StoredGroup[]; pageInfo: { hasNextPage: boolean; endCursor: string } };
      };
    } = await client.graphql(
      `query($id: ID!, $it: Int!, $after: String) { run(id: $id) { groups(iteration: $it, first: 50, after: $after) {
         nodes { id trajectories { id outcome steps { state action reward nll embedding value extra } } } pageInfo { hasNextPage endCursor } } } }`,
      { id: runId, it: iteration, after },
    );
    groups.push(...page.run.groups.nodes);
    if (!page.run.groups.pageInfo.hasNextPage) return groups;
    after = page.run.groups.pageInfo.endCursor;
  }
}
