import { DEFAULT_CONFIG, type TrainerConfig } from '../config';
import { InProcessRuns } from '../in-process-runs';
import { runTraining } from '../training-loop';
import { sampledRollouts } from '../trainer';

/** A frozen policy: the weights after `iteration` iterations of a training run, and how well it did then. */
export interface Snapshot {
  iteration: number;
  /** Training success of the batch sampled with these weights. */
  successRate: number;
  /** Absent for iteration 0: a learner with the run's seed starts with those weights. */
  checkpoint?: Uint8Array;
}

/**
 * Trains a policy in this process (GiGPO, the trainer's defaults, its value head included) and keeps
 * the checkpoint of the first iteration whose training success reaches each level: frozen policies
 * from untrained to good, from one run, so the snapshots differ only in how far training got.
 */
export async function trainSnapshots(
  env: string,
  levels: number[],
  iterations: number,
  seed: number,
): Promise<{ config: TrainerConfig; snapshots: Snapshot[] }> {
  const config: TrainerConfig = {
    ...DEFAULT_CONFIG,
    env,
    method: 'gigpo',
    seed,
    iterations,
    checkpointEvery: 1,
    evalEvery: iterations,
    trueAdvantages: false,
  };
  const runs = new InProcessRuns();
  const plan = {
    config,
    run: { name: `quality snapshots ${env}`, tags: ['quality'] },
    iterations: Array.from({ length: iterations }, (_, i) => i),
    source: sampledRollouts(config),
  };
  const { reports } = await runTraining(runs, plan, {});
  const run = [...runs.runs.values()][0]!;
  // checkpoint k holds the weights iteration k sampled with
  const snapshots: Snapshot[] = [];
  for (const level of levels) {
    const r = reports.find(
      (x) => x.successRate >= level && !snapshots.some((s) => s.iteration === x.iteration),
    );
    if (r)
      snapshots.push({
        iteration: r.iteration,
        successRate: r.successRate,
        checkpoint: run.checkpoints.get(r.iteration),
      });
  }
  return { config, snapshots: snapshots.sort((a, b) => a.iteration - b.iteration) };
}
