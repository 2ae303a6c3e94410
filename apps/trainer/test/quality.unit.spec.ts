import { seededRandom } from '@creditlab/random';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import { DEFAULT_CONFIG } from '../src/config';
import { selectBackend } from '../src/policy/backend';
import { TextPolicy } from '../src/policy/text-policy';
import { paperClaims } from '../src/quality/claims';
import { sampleDraws } from '../src/quality/draws';
import { wireGroup } from '../src/quality/methods';
import { runQuality, type QualityPlan } from '../src/quality/quality-run';

/** The harness at the smallest sizes: what must hold whatever the numbers are. */
const SMOKE: QualityPlan = {
  envs: ['errand-tiny'],
  groupSizes: [2, 4],
  draws: 3,
  tasks: 3,
  levels: [0],
  snapshotIterations: 1,
  gradientDraws: 2,
  resamples: 100,
  seed: 3,
  gamma: 0.95,
  claimsGroupSize: 4,
};

test('npm run quality at smoke size: oracle rows are exact, fixed rows have no variance, claims are judged, and the figures repeat given the seed', async () => {
  const first = await runQuality(SMOKE, 'errand-tiny', () => undefined);
  const second = await runQuality(SMOKE, 'errand-tiny', () => undefined);
  const strip = (r: typeof first) => r.snapshots;
  expect(strip(second)).toEqual(strip(first));
  const [snapshot] = first.snapshots;
  expect(snapshot!.iteration).toBe(0);
  expect(snapshot!.bySize.map((b) => b.groupSize)).toEqual([2, 4]);
  for (const { rows } of snapshot!.bySize) {
    const row = (name: string) => rows.find((r) => r.row === name)!;
    expect(row('truth').groupCorrelation.estimate).toBeCloseTo(1, 12);
    expect(row('truth').gradientCosine.mean).toBeCloseTo(1, 6);
    expect(row('truth').bias2.estimate).toBeCloseTo(0, 12);
    // the target's own return and the snapshot's critic do not depend on its companions
    expect(row('return − exact V').variance.estimate).toBeCloseTo(0, 12);
    expect(row('ppo-gae').variance.estimate).toBeCloseTo(0, 12);
    // GRPO's advantage does: its estimate of a target step moves with the companions drawn
    expect(row('grpo').variance.estimate!).toBeGreaterThan(0);
    expect(row('grpo').groupCorrelationVsGrpo).toEqual({ estimate: 0, low: 0, high: 0 });
    expect(rows.map((r) => r.row)).toContain('return (no baseline)');
  }
  expect(snapshot!.claims.map((c) => c.claim)).toEqual(['GACA', 'Gated-BEPO', 'GAGPO', 'BiPACE']);
  for (const c of snapshot!.claims) expect(typeof c.pass).toBe('boolean');
});

test('BiPACE merge purity counts a cluster within its own task group (cluster ids restart in every group)', async () => {
  await selectBackend();
  const policy = new TextPolicy({ ...DEFAULT_CONFIG.policy, seed: 5 });
  try {
    const draws = sampleDraws('errand-tiny', policy, 3, 4, 2, 0.95, seededRandom(9));
    const claim = paperClaims(draws, 1).find((c) => c.claim === 'BiPACE')!;
    // recomputed here: each draw's batch, BiPACE's clusters keyed by (group id, cluster id)
    for (const eps of [0, 0.1]) {
      let merged = 0;
      let pure = 0;
      for (let k = 0; k < 2; k++) {
        const groups = draws.map((d) => wireGroup(d.taskSeed, [d.target, ...d.companions[k]!]));
        const batch = columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups });
        const ids = estimate(batch, 'bipace', { clusterEpsilon: eps }).diagnostics.clusterId!;
        const clusters = new Map<string, string[]>();
        let at = 0;
        for (const g of groups)
          for (const t of g.trajectories)
            for (const st of t.steps) {
              const key = `${g.id}/${ids[at++]}`;
              clusters.set(key, [...(clusters.get(key) ?? []), st.state as string]);
            }
        for (const members of clusters.values()) {
          if (members.length < 2) continue;
          merged += members.length;
          pure += Math.max(...members.map((m) => members.filter((x) => x === m).length));
        }
      }
      const purity = merged ? pure / merged : 1;
      expect(claim.measured).toContain(`ε ${eps}: purity ${purity.toFixed(2)}`);
    }
  } finally {
    policy.dispose();
  }
});
