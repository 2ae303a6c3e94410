import { newEventId, rolloutEvents, type CreditlabClient } from '@creditlab/client';
import { textEnvironment, type TextEnvironment } from '@creditlab/envs';
import type { ClientEvent, RunInput } from '@creditlab/events';
import type { TrainerConfig } from './config';
import { evaluate, iterationRandom, type IterationReport, type TrainerHooks } from './iteration';
import { Learner } from './learner';
import { selectBackend } from './policy/backend';
import { CHECKPOINT_FORMAT } from './policy/checkpoint';
import type { TextPolicy } from './policy/text-policy';
import { ppoBatch } from './ppo-batch';
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
  learner: Learner;
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
  const learner = new Learner(config);
  const reports: IterationReport[] = [];
  try {
    if (plan.checkpoint) await learner.restore(plan.checkpoint);
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
    const run: Run = { sink, runId, config, env, learner, source: plan.source, last };
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
    learner.dispose();
  }
}

/**
 * One iteration, top to bottom: the rollouts (sampled or replayed) → streamed to Creditlab → the
 * advantages of the run's method, computed by the server on what it stored → a PPO update on them →
 * metrics logged, with a held-out evaluation and a checkpoint when due.
 */
async function iterationStep(run: Run, it: number): Promise<IterationReport> {
  const { sink, runId, config, learner } = run;
  const t0 = performance.now();
  const groups = await run.source.rollouts(it, learner.policy);
  // Steps as columns (the client's default), each step's taskSeed (replay needs it) in the extra column.
  const rollouts = rolloutEvents(it, { groups: groups.map(wireGroup) }, 2000);
  await sink.appendEvents(runId, rollouts);
  const { advantages } = await sink.advantages(runId, it, config.method, config.methodParams);
  const { batch, advantageRms } = ppoBatch(groups, advantages, config);
  const metrics = { ...learner.update(batch, it), ...rolloutStats(groups), advantageRms };
  const events: ClientEvent[] = [
    { id: newEventId(), type: 'metrics.logged', data: { iteration: it, metrics } },
  ];
  let evaluation: number | undefined;
  if ((it + 1) % config.evalEvery === 0 || it === run.last) {
    const rand = iterationRandom(config.seed, it, 'eval');
    evaluation = evaluate(run.env, learner.policy, config.evalTasks, rand);
    const data = { iteration: it, successRate: evaluation };
    events.push({ id: newEventId(), type: 'evaluation.logged', data });
  }
  await sink.appendEvents(runId, events);
  if (config.checkpointEvery > 0 && ((it + 1) % config.checkpointEvery === 0 || it === run.last)) {
    // Checkpoint it + 1: the weights iteration it + 1 would sample with (the server records checkpoint.saved).
    await sink.uploadCheckpoint(runId, it + 1, await learner.checkpoint(it + 1), CHECKPOINT_FORMAT);
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
