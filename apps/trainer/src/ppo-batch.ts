import type { TrainerConfig } from './config';
import { DEFAULT_CONFIG } from './config';
import type { PpoSample } from './policy/ppo';
import type { TaskGroup } from './rollout';

/**
 * The PPO samples of an iteration in canonical step order (group, trajectory, step: the order of the
 * server's advantage array), each with its advantage — standardised over the batch when the run
 * whitens — and the critic's target, the return-to-go discounted by the critic's γ. Also the RMS of
 * the nonzero advantages as received, which says at what scale the method pushed the policy.
 */
export function ppoBatch(
  groups: TaskGroup[],
  advantages: Float32Array,
  config: TrainerConfig,
): { batch: PpoSample[]; advantageRms: number } {
  const gamma = (config.critic ?? DEFAULT_CONFIG.critic).gamma;
  const batch: PpoSample[] = [];
  for (const g of groups)
    for (const t of g.trajectories) {
      const targets = returnsToGo(
        t.steps.map((s) => s.record.reward),
        gamma,
      );
      t.steps.forEach((s, j) =>
        batch.push({
          observation: s.record.state,
          actions: s.actions,
          chosen: s.chosen,
          oldLogProb: s.logProb,
          advantage: advantages[batch.length] as number,
          valueTarget: targets[j] as number,
        }),
      );
    }
  if (batch.length !== advantages.length)
    throw new Error(`server returned ${advantages.length} advantages for ${batch.length} steps`);
  const advantageRms = rmsOfNonzero(advantages);
  if (config.whitenAdvantages) whiten(batch);
  return { batch, advantageRms };
}

/** Discounted returns-to-go of one trajectory's rewards. */
export function returnsToGo(rewards: number[], gamma: number): number[] {
  const out = new Array<number>(rewards.length);
  let g = 0;
  for (let j = rewards.length - 1; j >= 0; j--) out[j] = g = (rewards[j] as number) + gamma * g;
  return out;
}

function rmsOfNonzero(x: Float32Array): number {
  let sum = 0;
  let n = 0;
  for (const v of x)
    if (v !== 0) {
      sum += v * v;
      n++;
    }
  return n ? Math.sqrt(sum / n) : 0;
}

/** A ← (A − mean) / (std + 1e-8) over the batch (population std); a constant batch becomes zeros. */
function whiten(batch: PpoSample[]): void {
  const n = batch.length || 1;
  const mean = batch.reduce((a, s) => a + s.advantage, 0) / n;
  const std = Math.sqrt(batch.reduce((a, s) => a + (s.advantage - mean) ** 2, 0) / n);
  for (const s of batch) s.advantage = std === 0 ? 0 : (s.advantage - mean) / (std + 1e-8);
}
