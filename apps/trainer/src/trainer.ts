import { CreditlabClient, newEventId, rolloutEvents, type Connection } from '@creditlab/client';
import { seededRandom, textEnvironment, type TextEnvironment } from '@creditlab/envs';
import type { ClientEvent } from '@creditlab/events';
import * as tf from '@tensorflow/tfjs';
import { createHash } from 'node:crypto';
import type { TrainerConfig } from './config';
import { selectBackend } from './policy/backend';
import {
  CHECKPOINT_FORMAT,
  decodeCheckpoint,
  encodeCheckpoint,
  restoreCheckpoint,
} from './policy/checkpoint';
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

/** Where a fork from a checkpoint starts: the checkpoint's bytes and its iteration k (the first one run). */
export interface ResumeFrom {
  iteration: number;
  checkpoint: Uint8Array;
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
  resume?: ResumeFrom,
): Promise<{ runId: string; reports: IterationReport[] }> {
  const backend = await selectBackend();
  const env = textEnvironment(config.env);
  const client = CreditlabClient.connect({ url: config.serverUrl, apiKey });
  const start = resume?.iteration ?? 0;
  const { id: runId } = await client.createRun({
    name: `${config.method} ${config.env} seed ${config.seed}`,
    env: config.env,
    method: config.method,
    params: config.methodParams,
    config: { ...config, backend },
    seed: config.seed,
    tags: ['trainer', backend],
    ...(config.parentRunId ? { parentRunId: config.parentRunId, forkIteration: start } : {}),
  });
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  if (resume) await restoreCheckpoint(decodeCheckpoint(resume.checkpoint), policy, optimizer);
  const reports: IterationReport[] = [];
  let status: 'completed' | 'aborted' | 'failed' = 'completed';
  try {
    for (let it = start; it < config.iterations; it++) {
      if (hooks.shouldStop?.()) {
        status = 'aborted';
        break;
      }
      const t0 = performance.now();
      const rand = iterationRandom(config.seed, it, 'train');
      const withTruth = config.trueAdvantages && env.exact;
      const groups = trainingTasks(env, config.tasksPerIteration, rand).map((task) => ({
        id: `task-${task.seed}`,
        trajectories: sampleGroup(
          env,
          task,
          policy,
          config.groupSize,
          rand,
          false,
          withTruth ? exactEvaluation(env, task, policy, config.trueAdvantageGamma) : undefined,
        ),
      }));
      await client.appendEvents(runId, rolloutEvents(it, { groups: groups.map(toWire) }));
      const { advantages } = await client.advantages(runId, it, config.method, config.methodParams);
      const batch = ppoBatch(groups, advantages);
      const update = ppoStep(policy, optimizer, batch, config, it);
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
        evaluation = evaluate(
          env,
          policy,
          config.evalTasks,
          iterationRandom(config.seed, it, 'eval'),
        );
        events.push({
          id: newEventId(),
          type: 'evaluation.logged',
          data: { iteration: it, successRate: evaluation },
        });
      }
      await client.appendEvents(runId, events);
      if (config.checkpointEvery > 0 && ((it + 1) % config.checkpointEvery === 0 || last)) {
        // Checkpoint it + 1: the weights iteration it + 1 would sample with (the server records checkpoint.saved).
        const bytes = await encodeCheckpoint(policy, optimizer, it + 1);
        await client.uploadCheckpoint(runId, it + 1, bytes, CHECKPOINT_FORMAT);
      }
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

/** PPO on one iteration's batch, its minibatches shuffled by the iteration's own random stream. */
function ppoStep(
  policy: TextPolicy,
  optimizer: tf.AdamOptimizer,
  batch: PpoSample[],
  config: TrainerConfig,
  iteration: number,
) {
  return ppoUpdate(
    policy,
    batch,
    { ...config.ppo, minibatches: config.ppo.minibatches ?? 1 }, // runs from before minibatches: one
    optimizer,
    iterationRandom(config.seed, iteration, 'update'),
  );
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
      steps: t.steps.map(
        ({ state, action, reward, nll, tokenLogprobs, embedding, value, trueAdvantage }) => ({
          state,
          action,
          reward,
          nll,
          tokenLogprobs,
          embedding,
          value,
          // a field beyond rollout-batch/v1: the server keeps it as the step's `extra`
          ...(trueAdvantage === undefined ? {} : { trueAdvantage }),
        }),
      ),
    })),
  };
}

/**
 * Held-out success: the policy as it acts in training (sampling, not greedy — a greedy soft policy can loop
 * on one action forever), 4 rollouts on each evaluation task.
 */
function evaluate(
  env: TextEnvironment,
  policy: TextPolicy,
  count: number,
  rand: () => number,
): number {
  const rollouts = evaluationTasks(env, count).flatMap((task) =>
    sampleGroup(env, task, policy, 4, rand),
  );
  return rollouts.filter((t) => t.outcome === 'success').length / rollouts.length;
}

/**
 * The random stream of one iteration (task choice and action sampling) or of its evaluation: a function
 * of (seed, iteration) only, so a fork from checkpoint k samples exactly what its parent sampled in
 * iteration k, and an evaluation never shifts the training stream.
 */
export function iterationRandom(
  seed: number,
  iteration: number,
  purpose: 'train' | 'eval' | 'update',
): () => number {
  const h = createHash('sha256').update(`${seed}/${iteration}/${purpose}`).digest();
  return seededRandom(h.readUInt32LE(0));
}

/**
 * Fork: a new run from run `parentRunId`'s config and seed under another method, linked to its parent.
 * From scratch (checkpoint 0), the same seed gives the same initial weights; from checkpoint k, the
 * parent's weights and optimizer state after k iterations. Either way the fork's first iteration (0, or
 * k) samples exactly the rollouts its parent sampled in that iteration, since an iteration's random
 * stream depends only on (seed, iteration): only the advantages, and what follows from them, differ.
 */
export async function fork(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
  overrides: Partial<TrainerConfig> = {},
  fromCheckpoint = 0,
): Promise<{ runId: string; reports: IterationReport[] }> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig & { backend?: string } } | null;
  }>('query($id: ID!) { run(id: $id) { config } }', { id: parentRunId });
  if (!run) throw new Error(`run ${parentRunId} not found`);
  const { backend: _backend, ...parent } = run.config;
  const resume =
    fromCheckpoint > 0
      ? {
          iteration: fromCheckpoint,
          checkpoint: (await client.downloadCheckpoint(parentRunId, fromCheckpoint)).data,
        }
      : undefined;
  return train(
    { ...parent, ...overrides, serverUrl: client.url, method, methodParams, parentRunId },
    hooks,
    server.apiKey,
    resume,
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
  const env = textEnvironment(config.env);
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
        const task = env.task(Number(g.id.replace('task-', '')));
        for (const t of g.trajectories) {
          let s = env.initialState(task);
          for (const st of t.steps) {
            const actions = env.admissibleActions(task, s);
            batch.push({
              observation: st.state,
              actions,
              chosen: actions.indexOf(st.action),
              oldLogProb: -(st.nll ?? 0),
              advantage: advantages[batch.length] as number,
            });
            s = env.step(task, s, st.action).state;
          }
        }
      }
      const update = ppoStep(policy, optimizer, batch, config, it);
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
    const last = reports.at(-1)?.iteration ?? 0;
    const evaluation = evaluate(
      env,
      policy,
      config.evalTasks,
      iterationRandom(config.seed, last, 'eval'),
    );
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
