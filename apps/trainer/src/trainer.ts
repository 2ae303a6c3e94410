import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { textEnvironment, type TextEnvironment } from '@creditlab/envs';
import type { ClientEvent } from '@creditlab/events';
import * as tf from '@tensorflow/tfjs';
import type { TrainerConfig } from './config';
import {
  evaluate,
  iterationRandom,
  ppoStep,
  type IterationReport,
  type TrainerHooks,
} from './iteration';
import { selectBackend } from './policy/backend';
import {
  CHECKPOINT_FORMAT,
  decodeCheckpoint,
  encodeCheckpoint,
  restoreCheckpoint,
} from './policy/checkpoint';
import type { PpoSample } from './policy/ppo';
import { TextPolicy } from './policy/text-policy';
import { recordEnding, type EndStatus } from './run-ending';
import { exactEvaluation, sampleGroup, trainingTasks, type SampledTrajectory } from './rollout';

export type { IterationReport, RunStart, TrainerHooks } from './iteration';

/** Where a fork from a checkpoint starts: the checkpoint's bytes and its iteration k (the first one run). */
export interface ResumeFrom {
  iteration: number;
  checkpoint: Uint8Array;
}

/** What one run of the loop works with. */
interface Session {
  config: TrainerConfig;
  env: TextEnvironment;
  client: CreditlabClient;
  runId: string;
  policy: TextPolicy;
  optimizer: tf.AdamOptimizer;
}

/**
 * The training loop, top to bottom per iteration: sample B tasks × G rollouts,
 * stream them to Creditlab, ask for the advantages of the run's method, PPO
 * update, log metrics (and held-out evaluations, checkpoints) as events.
 * Everything that can fail without the server (backend, environment, checkpoint) is settled before
 * the run is created; from then on, any error finishes the run as failed.
 */
export async function train(
  config: TrainerConfig,
  hooks: TrainerHooks = {},
  /** The key; default CREDITLAB_API_KEY, else the credentials file (never stored in the run's config). */
  apiKey?: string,
  resume?: ResumeFrom,
): Promise<{ runId: string; reports: IterationReport[]; status: EndStatus }> {
  const backend = await selectBackend();
  const env = textEnvironment(config.env);
  const client = CreditlabClient.connect({ url: config.serverUrl, apiKey });
  const start = resume?.iteration ?? 0;
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  const reports: IterationReport[] = [];
  try {
    if (resume) await restoreCheckpoint(decodeCheckpoint(resume.checkpoint), policy, optimizer);
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
    hooks.onStart?.({ runId, firstIteration: start, iterations: config.iterations });
    const session: Session = { config, env, client, runId, policy, optimizer };
    const status = await recordEnding(client, runId, {
      body: async () => {
        for (let it = start; it < config.iterations; it++) {
          if (hooks.shouldStop?.()) return 'aborted';
          const report = await trainIteration(session, it);
          reports.push(report);
          hooks.onIteration?.(report);
        }
        return 'completed';
      },
      summary: () => ({
        iterations: reports.length,
        bestEvaluation: Math.max(0, ...reports.map((r) => r.evaluation ?? 0)),
      }),
    });
    return { runId, reports, status };
  } finally {
    policy.dispose();
    optimizer.dispose();
  }
}

/** One iteration: sample, stream, advantages, PPO, metrics (and evaluation, checkpoint). */
async function trainIteration(s: Session, it: number): Promise<IterationReport> {
  const { config, env, client, runId, policy, optimizer } = s;
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
    trajectories.reduce((a, t) => a + t.steps.reduce((b, st) => b + st.reward, 0), 0) /
    trajectories.length;
  const metrics = { ...update, successRate, meanReturn };
  const events: ClientEvent[] = [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
  ];
  const last = it === config.iterations - 1;
  let evaluation: number | undefined;
  if ((it + 1) % config.evalEvery === 0 || last) {
    evaluation = evaluate(env, policy, config.evalTasks, iterationRandom(config.seed, it, 'eval'));
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
  return {
    iteration: it,
    successRate,
    meanReturn,
    steps: batch.length,
    stepsPerSecond: batch.length / seconds,
    metrics,
    evaluation,
  };
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
