import { selectBackend } from '../policy/backend';
import { Learner } from '../learner';
import { paperClaims, type ClaimResult } from './claims';
import { sampleDraws, streamFor } from './draws';
import { measure, type RowQuality } from './measure';
import { trainSnapshots } from './snapshots';

export interface QualityPlan {
  envs: string[];
  groupSizes: number[];
  /** Draws (K) per task, snapshot and group size. */
  draws: number;
  /** Training tasks (T) per draw. */
  tasks: number;
  /** Training success levels the snapshots are taken at (the first iteration reaching each). */
  levels: number[];
  snapshotIterations: number;
  gradientDraws: number;
  resamples: number;
  seed: number;
  gamma: number;
  /** The group size whose draws the paper claims are checked on. */
  claimsGroupSize: number;
}

export interface QualityResult {
  env: string;
  snapshots: {
    iteration: number;
    successRate: number;
    bySize: { groupSize: number; rows: RowQuality[] }[];
    /** The paper claims, on this snapshot's draws at the claims' group size. */
    claims: ClaimResult[];
  }[];
  cpuSeconds: number;
  seconds: number;
}

/** The whole harness for one environment: snapshots, then every group size's draws, then every row. */
export async function runQuality(
  plan: QualityPlan,
  env: string,
  log: (line: string) => void,
): Promise<QualityResult> {
  await selectBackend();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const { config, snapshots } = await trainSnapshots(
    env,
    plan.levels,
    plan.snapshotIterations,
    plan.seed,
  );
  const result: QualityResult = { env, snapshots: [], cpuSeconds: 0, seconds: 0 };
  for (const snap of snapshots) {
    const learner = new Learner(config);
    if (snap.checkpoint) await learner.restore(snap.checkpoint);
    let claims: ClaimResult[] = [];
    const bySize = plan.groupSizes.map((G) => {
      const rand = streamFor(env, plan.seed, snap.iteration, G, 'draws');
      const draws = sampleDraws(env, learner.policy, plan.tasks, G, plan.draws, plan.gamma, rand);
      const rows = measure(learner.policy, draws, {
        gamma: plan.gamma,
        gradientDraws: plan.gradientDraws,
        resamples: plan.resamples,
        seed: plan.seed,
      });
      log(
        `${env} snapshot ${snap.iteration} (training success ${(100 * snap.successRate).toFixed(0)} %), G = ${G}: done`,
      );
      if (G === plan.claimsGroupSize) claims = paperClaims(draws, plan.seed);
      return { groupSize: G, rows };
    });
    learner.dispose();
    result.snapshots.push({
      iteration: snap.iteration,
      successRate: snap.successRate,
      bySize,
      claims,
    });
  }
  const cpu = process.cpuUsage(c0);
  result.cpuSeconds = (cpu.user + cpu.system) / 1e6;
  result.seconds = (performance.now() - t0) / 1000;
  return result;
}
