import { seededRandom, type TextEnvironment } from '@creditlab/envs';
import { createHash } from 'node:crypto';
import type { TextPolicy } from './policy/text-policy';
import { evaluationTasks, sampleGroups } from './rollout';

export interface IterationReport {
  iteration: number;
  successRate: number;
  meanReturn: number;
  steps: number;
  stepsPerSecond: number;
  metrics: Record<string, number>;
  evaluation?: number;
}

/** A run as it starts: its id, and the iterations it will run (`firstIteration` … `iterations` − 1). */
export interface RunStart {
  runId: string;
  firstIteration: number;
  iterations: number;
}

export interface TrainerHooks {
  /** Called once the run exists, before its first iteration. */
  onStart?(run: RunStart): void;
  onIteration?(report: IterationReport): void;
  /** Checked before each iteration: true finishes the run as aborted. */
  shouldStop?(): boolean;
}

/**
 * Held-out success: the policy as it acts in training (sampling, not greedy — a greedy soft policy can loop
 * on one action forever), 4 rollouts on each of the first `count` evaluation tasks.
 */
export function evaluate(
  env: TextEnvironment,
  policy: TextPolicy,
  count: number,
  rand: () => number,
): number {
  const rollouts = sampleGroups(env, evaluationTasks(env, count), policy, 4, rand).flat();
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
