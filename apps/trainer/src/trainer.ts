import { CreditlabClient, newEventId, rolloutEvents, type Connection } from '@creditlab/client';
import {
  admissibleActions,
  householdTask,
  initialState,
  seededRandom,
  step as envStep,
  type HouseholdSizeName,
} from '@creditlab/envs';
import type { ClientEvent } from '@creditlab/events';
import * as tf from '@tensorflow/tfjs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TrainerConfig } from './config';
import { selectBackend } from './policy/backend';
import { ppoUpdate, type PpoSample } from './policy/ppo';
import { TextPolicy } from './policy/text-policy';
import {
  evaluationTasks,
  exactEvaluation,
  sampleGroup,
  trainingTasks,
  type SampledTrajectory,
} from './rollout';

export interface IterationReport {
  iteration: number;
  successRate: number;
  meanReturn: number;
  steps: number;
  stepsPerSecond: number;
  metrics: Record<string, number>;
  evaluation?: number;
}

export interface TrainerHooks {
  onIteration?(report: IterationReport): void;
  /** Checked between iterations: true finishes the run as aborted. */
  shouldStop?(): boolean;
}

/**
 * The training loop, top to bottom per iteration: sample B tasks × G rollouts,
 * stream them to Creditlab, ask for the advantages of the run's method, PPO
 * update, log metrics (and held-out evaluations, checkpoints) as events.
 */
export async function train(
  config: TrainerConfig,
  hooks: TrainerHooks = {},
  /** The key; default CREDITLAB_API_KEY, else the credentials file (never stored in the run's config). */
  apiKey?: string,
): Promise<{ runId: string; reports: IterationReport[] }> {
  const backend = await selectBackend();
  const size = config.env.replace('household-', '') as HouseholdSizeName;
  const client = CreditlabClient.connect({ url: config.serverUrl, apiKey });
  const { id: runId } = await client.createRun({
    name: `${config.method} ${config.env} seed ${config.seed}`,
    env: config.env,
    method: config.method,
    params: config.methodParams,
    config: { ...config, backend },
    seed: config.seed,
    tags: ['trainer', backend],
    ...(config.parentRunId ? { parentRunId: config.parentRunId, forkIteration: 0 } : {}),
  });
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  const rand = seededRandom(config.seed);
  const reports: IterationReport[] = [];
  let status: 'completed' | 'aborted' | 'failed' = 'completed';
  try {
    for (let it = 0; it < config.iterations; it++) {
      if (hooks.shouldStop?.()) {
        status = 'aborted';
        break;
      }
      const t0 = performance.now();
      const withTruth = config.trueAdvantages && size === 'tiny';
      const groups = trainingTasks(size, config.tasksPerIteration, rand).map((task) => ({
        id: `task-${task.seed}`,
        trajectories: sampleGroup(
          task,
          policy,
          config.groupSize,
          rand,
          false,
          withTruth ? exactEvaluation(task, policy, config.trueAdvantageGamma) : undefined,
        ),
      }));
      await client.appendEvents(runId, rolloutEvents(it, { groups: groups.map(toWire) }));
      const { advantages } = await client.advantages(runId, it, config.method, config.methodParams);
      const batch = ppoBatch(groups, advantages);
      const update = ppoUpdate(policy, batch, config.ppo, optimizer);
      const trajectories = groups.flatMap((g) => g.trajectories);
      const successRate =
        trajectories.filter((t) => t.outcome === 'success').length / trajectories.length;
      const meanReturn =
        trajectories.reduce((a, t) => a + t.steps.reduce((b, s) => b + s.reward, 0), 0) /
        trajectories.length;
      const metrics = { ...update, successRate, meanReturn };
      const events: ClientEvent[] = [
        { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
      ];
      const last = it === config.iterations - 1;
      let evaluation: number | undefined;
      if ((it + 1) % config.evalEvery === 0 || last) {
        evaluation = evaluate(policy, size, config.evalTasks, rand);
        events.push({
          id: newEventId(),
          type: 'evaluation.logged',
          data: { iteration: it, successRate: evaluation },
        });
      }
      if (config.checkpointEvery > 0 && ((it + 1) % config.checkpointEvery === 0 || last)) {
        const uri = await saveCheckpoint(policy, config.checkpointDir, runId, it);
        events.push({ id: newEventId(), type: 'checkpoint.saved', data: { iteration: it, uri } });
      }
      await client.appendEvents(runId, events);
      const seconds = (performance.now() - t0) / 1000;
      const report = {
        iteration: it,
        successRate,
        meanReturn,
        steps: batch.length,
        stepsPerSecond: batch.length / seconds,
        metrics,
        evaluation,
      };
      reports.push(report);
      hooks.onIteration?.(report);
    }
  } catch (e) {
    status = 'failed';
    throw e;
  } finally {
    const best = Math.max(0, ...reports.map((r) => r.evaluation ?? 0));
    await client
      .appendEvents(runId, [
        {
          id: newEventId(),
          type: 'run.finished',
          data: { status, summary: { iterations: reports.length, bestEvaluation: best } },
        },
      ])
      .catch(() => undefined);
    policy.dispose();
  }
  return { runId, reports };
}

/** Steps in canonical order (group, trajectory, step): the order of the server's advantage array. */
function ppoBatch(
  groups: { trajectories: SampledTrajectory[] }[],
  advantages: Float32Array,
): PpoSample[] {
  const batch: PpoSample[] = [];
  for (const g of groups) {
    for (const t of g.trajectories) {
      for (const s of t.steps) {
        batch.push({
          observation: s.state,
          actions: s.actions,
          chosen: s.chosen,
          oldLogProb: s.logProb,
          advantage: advantages[batch.length] as number,
        });
      }
    }
  }
  if (batch.length !== advantages.length)
    throw new Error(`server returned ${advantages.length} advantages for ${batch.length} steps`);
  return batch;
}

function toWire(g: { id: string; trajectories: SampledTrajectory[] }) {
  return {
    id: g.id,
    trajectories: g.trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome,
      steps: t.steps.map(({ state, action, reward, nll, tokenLogprobs, embedding, value }) => ({
        state,
        action,
        reward,
        nll,
        tokenLogprobs,
        embedding,
        value,
      })),
    })),
  };
}

/**
 * Held-out success: the policy as it acts in training (sampling, not greedy — a greedy soft policy can loop
 * on one action forever), 4 rollouts on each evaluation task.
 */
function evaluate(
  policy: TextPolicy,
  size: HouseholdSizeName,
  count: number,
  rand: () => number,
): number {
  const rollouts = evaluationTasks(size, count).flatMap((task) =>
    sampleGroup(task, policy, 4, rand),
  );
  return rollouts.filter((t) => t.outcome === 'success').length / rollouts.length;
}

async function saveCheckpoint(
  policy: TextPolicy,
  dir: string,
  runId: string,
  iteration: number,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.resolve(dir, `${runId}-iteration-${iteration}.json`);
  const weights = Object.fromEntries(
    policy.variables.map((v, i) => [
      String(i),
      { shape: v.shape, values: Array.from(v.dataSync()) },
    ]),
  );
  await writeFile(file, JSON.stringify({ config: policy.config, weights }));
  return `file://${file}`;
}

/**
 * Fork: a new run from run `parentRunId`'s config and seed, from scratch, under another method, linked to
 * its parent. The same seed means the same initial weights and the same random stream, so the first
 * iteration's rollouts are identical and only the advantages (and what follows from them) differ.
 */
export async function fork(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
  overrides: Partial<TrainerConfig> = {},
): Promise<{ runId: string; reports: IterationReport[] }> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig & { backend?: string } } | null;
  }>('query($id: ID!) { run(id: $id) { config } }', { id: parentRunId });
  if (!run) throw new Error(`run ${parentRunId} not found`);
  const { backend: _backend, ...parent } = run.config;
  return train(
    { ...parent, ...overrides, serverUrl: client.url, method, methodParams, parentRunId },
    hooks,
    server.apiKey,
  );
}

interface StoredGroup {
  id: string;
  trajectories: {
    id: string;
    outcome: string;
    steps: {
      state: string;
      action: string;
      reward: number;
      nll: number | null;
      embedding: number[] | null;
      value: number | null;
    }[];
  }[];
}

/**
 * Retrain: run `parentRunId`'s updates again on its stored rollouts under another method — same data,
 * other credit. A new run linked to the parent receives copies of the parent's rollouts iteration by
 * iteration (so its advantage sets and `advantages.used` events are its own), and a fresh policy with the
 * parent's seed is updated with PPO on them; the rollout policy's log-probabilities are the stored NLLs.
 * Admissible action lists are not stored: they are rebuilt by replaying each trajectory in its task.
 */
export async function retrain(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
): Promise<{ runId: string; reports: IterationReport[] }> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig; iterations: { index: number; stepCount: number }[] } | null;
  }>('query($id: ID!) { run(id: $id) { config iterations { index stepCount } } }', {
    id: parentRunId,
  });
  if (!run) throw new Error(`run ${parentRunId} not found`);
  const config = { ...run.config, serverUrl: client.url, method, methodParams };
  const size = config.env.replace('household-', '') as HouseholdSizeName;
  const { id: runId } = await client.createRun({
    name: `retrain ${method} on ${parentRunId.slice(0, 8)}`,
    env: config.env,
    method,
    params: methodParams,
    config: { ...config, retrainOf: parentRunId },
    seed: config.seed,
    tags: ['retrain'],
    parentRunId,
    forkIteration: 0,
  });
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  const reports: IterationReport[] = [];
  try {
    for (const { index: it } of run.iterations.filter((i) => i.stepCount > 0)) {
      if (hooks.shouldStop?.()) break;
      const t0 = performance.now();
      const groups = await storedGroups(client, parentRunId, it);
      await client.appendEvents(
        runId,
        rolloutEvents(it, {
          groups: groups.map((g) => ({
            id: g.id,
            trajectories: g.trajectories.map((t) => ({
              id: t.id,
              outcome: t.outcome,
              steps: t.steps.map(stripNulls),
            })),
          })),
        }),
      );
      const { advantages } = await client.advantages(runId, it, method, methodParams);
      const batch: PpoSample[] = [];
      for (const g of groups) {
        const task = householdTask(Number(g.id.replace('task-', '')), size);
        for (const t of g.trajectories) {
          let s = initialState(task);
          for (const st of t.steps) {
            const actions = admissibleActions(task, s);
            batch.push({
              observation: st.state,
              actions,
              chosen: actions.indexOf(st.action),
              oldLogProb: -(st.nll ?? 0),
              advantage: advantages[batch.length] as number,
            });
            s = envStep(task, s, st.action).state;
          }
        }
      }
      const update = ppoUpdate(policy, batch, config.ppo, optimizer);
      const metrics = { ...update };
      await client.appendEvents(runId, [
        { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
      ]);
      const report: IterationReport = {
        iteration: it,
        successRate: NaN,
        meanReturn: NaN,
        steps: batch.length,
        stepsPerSecond: batch.length / ((performance.now() - t0) / 1000),
        metrics,
      };
      reports.push(report);
      hooks.onIteration?.(report);
    }
    const evaluation = evaluate(policy, size, config.evalTasks, seededRandom(config.seed));
    const last = reports.at(-1)?.iteration ?? 0;
    await client.appendEvents(runId, [
      {
        id: newEventId(),
        type: 'evaluation.logged',
        data: { iteration: last, successRate: evaluation },
      },
      {
        id: newEventId(),
        type: 'run.finished',
        data: { status: 'completed', summary: { evaluation, iterations: reports.length } },
      },
    ]);
    if (reports.length) (reports.at(-1) as IterationReport).evaluation = evaluation;
  } finally {
    policy.dispose();
  }
  return { runId, reports };
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

function stripNulls(step: StoredGroup['trajectories'][number]['steps'][number]) {
  return Object.fromEntries(Object.entries(step).filter(([, v]) => v !== null));
}
