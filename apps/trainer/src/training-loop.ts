import { newEventId, rolloutEvents, type CreditlabClient } from '@creditlab/client';
import { textEnvironment, type TextEnvironment } from '@creditlab/envs';
import type { ClientEvent, RunInput } from '@creditlab/events';
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
import { rolloutStats, type TaskGroup } from './rollout';
import { recordEnding, type EndStatus } from './run-ending';

/** What the loop needs of Creditlab: a `CreditlabClient`, or anything that answers the same calls. */
export type RunSink = Pick<
  CreditlabClient,
  'createRun' | 'appendEvents' | 'advantages' | 'uploadCheckpoint'
>;

/** Where an iteration's rollouts come from: sampled by the policy being trained, or replayed from a stored run. */
export interface RolloutSource {
  /** The task groups of `iteration`, in the order they are streamed (the order of the advantages). */
  rollouts(iteration: number, policy: TextPolicy): Promise<TaskGroup[]>;
}

/** One run of the loop: train, fork and retrain differ only in what they put here. */
export interface TrainingPlan {
  /** Drives the loop (method, seed, PPO, schedule) and is stored as the run's config, with the backend. */
  config: TrainerConfig;
  /** How the run is named, tagged and linked to a parent. */
  run: Pick<RunInput, 'name' | 'parentRunId' | 'forkIteration'> & { tags: string[] };
  /** The iterations to run, in order. */
  iterations: number[];
  source: RolloutSource;
  /** Weights and optimizer state to start from (a fork from checkpoint k). */
  checkpoint?: Uint8Array;
}

export interface TrainingResult {
  runId: string;
  reports: IterationReport[];
  status: EndStatus;
}

/** What one run of the loop works with. */
interface Run {
  sink: RunSink;
  runId: string;
  config: TrainerConfig;
  env: TextEnvironment;
  policy: TextPolicy;
  optimizer: tf.AdamOptimizer;
  source: RolloutSource;
  /** The plan's last iteration: it is always evaluated and checkpointed. */
  last: number;
}

/**
 * The training loop: create the run, then for each planned iteration one `iterationStep`, then
 * record how the run ended. Everything that can fail without the server (backend, environment,
 * checkpoint) is settled before the run is created; from then on, any error finishes it as failed.
 */
export async function runTraining(
  sink: RunSink,
  plan: TrainingPlan,
  hooks: TrainerHooks = {},
): Promise<TrainingResult> {
  const { config } = plan;
  const backend = await selectBackend();
  const env = textEnvironment(config.env);
  const policy = new TextPolicy({ ...config.policy, seed: config.seed });
  const optimizer = tf.train.adam(config.ppo.learningRate);
  const reports: IterationReport[] = [];
  try {
    if (plan.checkpoint)
      await restoreCheckpoint(decodeCheckpoint(plan.checkpoint), policy, optimizer);
    const { id: runId } = await sink.createRun({
      ...plan.run,
      env: config.env,
      method: config.method,
      params: config.methodParams,
      config: { ...config, backend },
      seed: config.seed,
      tags: [...plan.run.tags, backend],
    });
    hooks.onStart?.({
      runId,
      firstIteration: plan.iterations[0] ?? 0,
      iterations: config.iterations,
    });
    const last = plan.iterations.at(-1) ?? -1;
    const run: Run = { sink, runId, config, env, policy, optimizer, source: plan.source, last };
    const status = await recordEnding(sink, runId, {
      body: async () => {
        for (const it of plan.iterations) {
          if (hooks.shouldStop?.()) return 'aborted';
          const report = await iterationStep(run, it);
          reports.push(report);
          hooks.onIteration?.(report);
        }
        return 'completed';
      },
      summary: () => summaryOf(reports),
    });
    return { runId, reports, status };
  } finally {
    policy.dispose();
    optimizer.dispose();
  }
}

/**
 * One iteration, top to bottom: the rollouts (sampled or replayed) → streamed to Creditlab → the
 * advantages of the run's method, computed by the server on what it stored → a PPO update on them →
 * metrics logged, with a held-out evaluation and a checkpoint when due.
 */
async function iterationStep(run: Run, it: number): Promise<IterationReport> {
  const { sink, runId, config, policy, optimizer } = run;
  const t0 = performance.now();
  const groups = await run.source.rollouts(it, policy);
  await sink.appendEvents(runId, rolloutEvents(it, { groups: groups.map(wireGroup) }));
  const { advantages } = await sink.advantages(runId, it, config.method, config.methodParams);
  const batch = ppoBatch(groups, advantages);
  const metrics = { ...ppoStep(policy, optimizer, batch, config, it), ...rolloutStats(groups) };
  const events: ClientEvent[] = [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
  ];
  let evaluation: number | undefined;
  if ((it + 1) % config.evalEvery === 0 || it === run.last) {
    const rand = iterationRandom(config.seed, it, 'eval');
    evaluation = evaluate(run.env, policy, config.evalTasks, rand);
    const data = { iteration: it, successRate: evaluation };
    events.push({ id: newEventId(), type: 'evaluation.logged', data });
  }
  await sink.appendEvents(runId, events);
  if (config.checkpointEvery > 0 && ((it + 1) % config.checkpointEvery === 0 || it === run.last)) {
    // Checkpoint it + 1: the weights iteration it + 1 would sample with (the server records checkpoint.saved).
    const bytes = await encodeCheckpoint(policy, optimizer, it + 1);
    await sink.uploadCheckpoint(runId, it + 1, bytes, CHECKPOINT_FORMAT);
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    iteration: it,
    successRate: metrics.successRate,
    meanReturn: metrics.meanReturn,
    steps: batch.length,
    stepsPerSecond: batch.length / seconds,
    metrics,
    evaluation,
  };
}

/** Steps in canonical order (group, trajectory, step): the order of the server's advantage array. */
function ppoBatch(groups: TaskGroup[], advantages: Float32Array): PpoSample[] {
  const batch: PpoSample[] = [];
  for (const g of groups)
    for (const t of g.trajectories)
      for (const s of t.steps)
        batch.push({
          observation: s.record.state,
          actions: s.actions,
          chosen: s.chosen,
          oldLogProb: s.logProb,
          advantage: advantages[batch.length] as number,
        });
  if (batch.length !== advantages.length)
    throw new Error(`server returned ${advantages.length} advantages for ${batch.length} steps`);
  return batch;
}

/** A task group as rollout-batch/v1 (each step's record as it is: extras become the step's `extra`). */
function wireGroup(g: TaskGroup) {
  return {
    id: g.id,
    trajectories: g.trajectories.map((t) => ({
      id: t.id,
      outcome: t.outcome,
      steps: t.steps.map((s) => s.record),
    })),
  };
}

function summaryOf(reports: IterationReport[]): Record<string, unknown> {
  const evaluations = reports.flatMap((r) => (r.evaluation === undefined ? [] : [r.evaluation]));
  return {
    iterations: reports.length,
    bestEvaluation: Math.max(0, ...evaluations),
    ...(evaluations.length ? { finalEvaluation: evaluations.at(-1) } : {}),
  };
}
