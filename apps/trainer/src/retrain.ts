import { CreditlabClient, newEventId, rolloutEvents, type Connection } from '@creditlab/client';
import { textEnvironment, type TextEnvironment } from '@creditlab/envs';
import * as tf from '@tensorflow/tfjs';
import type { TrainerConfig } from './config';
import { TrainerInputError } from './errors';
import {
  evaluate,
  iterationRandom,
  ppoStep,
  type IterationReport,
  type TrainerHooks,
} from './iteration';
import { selectBackend } from './policy/backend';
import type { PpoSample } from './policy/ppo';
import { TextPolicy } from './policy/text-policy';
import { recordEnding, type EndStatus } from './run-ending';

interface StoredStep {
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  embedding: number[] | null;
  value: number | null;
}

interface StoredGroup {
  id: string;
  trajectories: { id: string; outcome: string; steps: StoredStep[] }[];
}

/**
 * Retrain: run `parentRunId`'s updates again on its stored rollouts under another method — same data,
 * other credit. A new run linked to the parent receives copies of the parent's rollouts iteration by
 * iteration (so its advantage sets and `advantages.used` events are its own), and a fresh policy with the
 * parent's seed is updated with PPO on them; the rollout policy's log-probabilities are the stored NLLs.
 * Admissible action lists are not stored: they are rebuilt by replaying each trajectory in its task.
 * `iterations`: retrain only the parent's iterations below it (default: all of them).
 */
export async function retrain(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
  options: { iterations?: number } = {},
): Promise<{ runId: string; reports: IterationReport[]; status: EndStatus }> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig; iterations: { index: number; stepCount: number }[] } | null;
  }>('query($id: ID!) { run(id: $id) { config iterations { index stepCount } } }', {
    id: parentRunId,
  });
  if (!run) throw new TrainerInputError(`run ${parentRunId} not found`);
  const stored = run.iterations.filter((i) => i.stepCount > 0).map((i) => i.index);
  const end = options.iterations ?? (stored.at(-1) ?? -1) + 1;
  if (options.iterations !== undefined && !stored.includes(options.iterations - 1))
    throw new TrainerInputError(
      `run ${parentRunId} has rollouts for iterations ${stored.join(', ') || '(none)'}; --iterations ${options.iterations} asks for iteration ${options.iterations - 1}`,
    );
  const config = { ...run.config, serverUrl: client.url, method, methodParams };
  const env = textEnvironment(config.env);
  const backend = await selectBackend();
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  const reports: IterationReport[] = [];
  let evaluation: number | undefined;
  try {
    const { id: runId } = await client.createRun({
      name: `retrain ${method} on ${parentRunId.slice(0, 8)}`,
      env: config.env,
      method,
      params: methodParams,
      config: { ...config, iterations: end, backend, retrainOf: parentRunId },
      seed: config.seed,
      tags: ['retrain', backend],
      parentRunId,
      forkIteration: 0,
    });
    hooks.onStart?.({ runId, firstIteration: stored[0] ?? 0, iterations: end });
    const status = await recordEnding(client, runId, {
      body: async () => {
        for (const it of stored.filter((i) => i < end)) {
          if (hooks.shouldStop?.()) return 'aborted';
          const t0 = performance.now();
          const groups = await storedGroups(client, parentRunId, it);
          await client.appendEvents(runId, rolloutEvents(it, { groups: groups.map(withoutNulls) }));
          const { advantages } = await client.advantages(runId, it, method, methodParams);
          const batch = replayedBatch(
            env,
            groups,
            advantages,
            `run ${parentRunId} iteration ${it}`,
          );
          const metrics = { ...ppoStep(policy, optimizer, batch, config, it) };
          await client.appendEvents(runId, [
            { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
          ]);
          const steps = batch.length;
          const report = { iteration: it, successRate: NaN, meanReturn: NaN, steps, metrics };
          reports.push({ ...report, stepsPerSecond: steps / ((performance.now() - t0) / 1000) });
          hooks.onIteration?.(reports.at(-1) as IterationReport);
        }
        const last = reports.at(-1);
        if (!last) return 'completed';
        evaluation = evaluate(
          env,
          policy,
          config.evalTasks,
          iterationRandom(config.seed, last.iteration, 'eval'),
        );
        last.evaluation = evaluation;
        await client.appendEvents(runId, [
          {
            id: newEventId(),
            type: 'evaluation.logged',
            data: { iteration: last.iteration, successRate: evaluation },
          },
        ]);
        return 'completed';
      },
      summary: () => ({
        iterations: reports.length,
        ...(evaluation === undefined ? {} : { evaluation }),
      }),
    });
    return { runId, reports, status };
  } finally {
    policy.dispose();
    optimizer.dispose();
  }
}

/**
 * The PPO samples of stored rollouts, in canonical step order, each trajectory replayed in its task
 * to rebuild the admissible actions. Rollouts that do not replay in this environment (another
 * environment's, or edited) are an error naming the step.
 */
function replayedBatch(
  env: TextEnvironment,
  groups: StoredGroup[],
  advantages: Float32Array,
  where: string,
): PpoSample[] {
  const batch: PpoSample[] = [];
  for (const g of groups) {
    const seed = /^task-(\d+)$/.exec(g.id)?.[1];
    if (seed === undefined)
      throw new Error(
        `${where}, group "${g.id}": not a task of ${env.name} (expected "task-<seed>")`,
      );
    const task = env.task(Number(seed));
    for (const t of g.trajectories) {
      let s = env.initialState(task);
      t.steps.forEach((st, i) => {
        const actions = env.admissibleActions(task, s);
        const chosen = actions.indexOf(st.action);
        if (chosen < 0)
          throw new Error(
            `${where}, trajectory "${t.id}", step ${i}: action ${JSON.stringify(st.action)} is not admissible in ${env.name} task ${seed}`,
          );
        batch.push({
          observation: st.state,
          actions,
          chosen,
          oldLogProb: -(st.nll ?? 0),
          advantage: advantages[batch.length] as number,
        });
        s = env.step(task, s, st.action).state;
      });
    }
  }
  return batch;
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
         nodes { id trajectories { id outcome steps { state action reward nll embedding value } } } pageInfo { hasNextPage endCursor } } } }`,
      { id: runId, it: iteration, after },
    );
    groups.push(...page.run.groups.nodes);
    if (!page.run.groups.pageInfo.hasNextPage) return groups;
    after = page.run.groups.pageInfo.endCursor;
  }
}

/** A stored group as rollout-batch/v1 again: absent fields come back as null and are left out. */
function withoutNulls(g: StoredGroup) {
  return {
    id: g.id,
    trajectories: g.trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome,
      steps: t.steps.map((step) =>
        Object.fromEntries(Object.entries(step).filter(([, v]) => v !== null)),
      ),
    })),
  };
}
