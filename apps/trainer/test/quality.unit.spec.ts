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
