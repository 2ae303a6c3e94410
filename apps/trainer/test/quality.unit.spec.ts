import { seededRandom } from '@creditlab/random';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import { DEFAULT_CONFIG } from '../src/config';
import { selectBackend } from '../src/policy/backend';
import { TextPolicy } from '../src/policy/text-policy';
import { paperClaims } from '../src/quality/claims';
import { sampleDraws } from '../src/quality/draws';
import { GradientCosines } from '../src/quality/gradient-cosine';
import { drawBatch, measure, taskOffsets } from '../src/quality/measure';
import { QUALITY_ROWS, wireGroup } from '../src/quality/methods';
import { cosine, policyGradient } from '../src/quality/policy-gradient';
import { qualityChartSeries } from '../src/quality/quality-charts';
import { runQuality, type QualityPlan } from '../src/quality/quality-run';
import {
  GROUP_BASELINES,
  sanityTable,
  sanityVerdicts,
  verdictOf,
} from '../src/quality/sanity-check';

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
    // the truth's gradient is the exact one on every resample: its cosine is 1 with no spread
    for (const bound of Object.values(row('truth').gradientCosine))
      expect(bound).toBeCloseTo(1, 12);
    expect(row('grpo').gradientCosineVsGrpo).toEqual({ estimate: 0, low: 0, high: 0 });
    expect(row('return (no baseline)').gradientCosineVsPlain).toEqual({
      estimate: 0,
      low: 0,
      high: 0,
    });
    for (const r of rows) {
      const c = r.gradientCosine;
      // on these draws the percentile interval holds the point estimate (a mean of draws, each in [−1, 1];
      // for a cosine of resampled sums that is checked here, not guaranteed in general)
      expect(c.low! - 1e-12).toBeLessThanOrEqual(c.estimate!);
      expect(c.high! + 1e-12).toBeGreaterThanOrEqual(c.estimate!);
      expect(Math.abs(c.estimate!)).toBeLessThanOrEqual(1 + 1e-12);
      // the differences are of the same point estimates
      expect(r.gradientCosineVsGrpo.estimate).toBeCloseTo(
        c.estimate! - row('grpo').gradientCosine.estimate!,
        12,
      );
      expect(r.gradientCosineVsPlain.estimate).toBeCloseTo(
        c.estimate! - row('return (no baseline)').gradientCosine.estimate!,
        12,
      );
    }
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

test('the gradient cosine of a resample of tasks is the cosine of the resampled sums of per-task gradients', () => {
  const rand = seededRandom(4);
  const vec = () => Float64Array.from({ length: 50 }, () => rand() - 0.5);
  const T = 5;
  const exact = Array.from({ length: T }, vec);
  const row = Array.from({ length: T }, vec);
  const cosines = new GradientCosines(2, T);
  cosines.beginDraw(exact);
  cosines.addRow(0, exact);
  cosines.addRow(1, row);
  const w = Float64Array.from([2, 0, 1, 0, 2]);
  const sum = (gs: Float64Array[]) =>
    gs.reduce((acc, g, t) => acc.map((x, i) => x + w[t]! * g[i]!), new Float64Array(50));
  expect(cosines.cosine(1, 0, w)).toBeCloseTo(cosine(sum(row), sum(exact))!, 12);
  expect(cosines.cosine(0, 0, w)).toBe(1);
  // a zero gradient moves nothing along the exact one
  cosines.addRow(
    1,
    row.map((g) => g.map(() => 0)),
  );
  expect(cosines.cosine(1, 0, w)).toBe(0);
});

test("measure's gradient cosine agrees with whole-batch gradients recomputed from each draw's advantages", async () => {
  await selectBackend();
  const policy = new TextPolicy({ ...DEFAULT_CONFIG.policy, seed: 6 });
  try {
    const draws = sampleDraws('household-tiny', policy, 3, 4, 2, 0.95, seededRandom(8));
    const rows = measure(policy, draws, { gamma: 0.95, gradientDraws: 2, resamples: 100, seed: 2 });
    // the tasks the bootstrap resamples: each task's target and companions, contiguous, in order
    const sizes = draws.map(
      (d) => d.target.steps.length + d.companions[1]!.reduce((n, t) => n + t.steps.length, 0),
    );
    expect(taskOffsets(drawBatch(draws, 1, 0.95).trajectories)).toEqual(
      sizes.reduce((o, n) => [...o, o.at(-1)! + n], [0]),
    );
    for (const name of ['grpo', 'return (no baseline)', 'bipace']) {
      const spec = QUALITY_ROWS.find((r) => r.name === name)!;
      const perDraw = [0, 1].map((k) => {
        const { groups, steps, truth, decisions } = drawBatch(draws, k, 0.95);
        const a = spec.advantages(groups, steps, 0.95);
        return (
          cosine(policyGradient(policy, decisions, a), policyGradient(policy, decisions, truth)) ??
          0
        );
      });
      const measured = rows.find((r) => r.row === name)!.gradientCosine.estimate!;
      // per-task float32 gradients summed in float64 against one float32 batch gradient
      expect(measured).toBeCloseTo((perDraw[0]! + perDraw[1]!) / 2, 4);
    }
  } finally {
    policy.dispose();
  }
});

test('the sanity check judges each group baseline by the interval of its cosine minus the plain return', async () => {
  expect(verdictOf({ estimate: 0.2, low: 0.1, high: 0.3 })).toBe('pass');
  expect(verdictOf({ estimate: -0.2, low: -0.3, high: -0.1 })).toBe('fail');
  expect(verdictOf({ estimate: 0.1, low: -0.1, high: 0.3 })).toBe('not established');
  expect(verdictOf({ estimate: 0.1, low: null, high: null })).toBe('not established');
  const result = await runQuality(SMOKE, 'errand-tiny', () => undefined);
  const snapshot = result.snapshots[0]!;
  expect(sanityVerdicts({ ...snapshot, successRate: 0.5 })).toEqual([]);
  const above = { ...snapshot, successRate: 0.6 };
  const verdicts = sanityVerdicts(above);
  expect(verdicts).toHaveLength(SMOKE.groupSizes.length * GROUP_BASELINES.length);
  const table = sanityTable(above);
  for (const v of verdicts) {
    const row = above.bySize
      .find((b) => b.groupSize === v.groupSize)!
      .rows.find((r) => r.row === v.row)!;
    expect(v.difference).toEqual(row.gradientCosineVsPlain);
    const { low, high } = v.difference;
    const expected = low! > 0 ? 'pass' : high! < 0 ? 'fail' : 'not established';
    expect(v.verdict).toBe(expected);
  }
  for (const G of SMOKE.groupSizes) expect(table).toContain(`| ${G} | `);
});

test('the quality charts draw every row but the truth, each named in the legend in a colour of its own', () => {
  const series = qualityChartSeries(() => [[0, 0]]);
  expect(series.map((s) => s.name)).toEqual(
    QUALITY_ROWS.map((r) => r.name).filter((n) => n !== 'truth'),
  );
  expect(series.map((s) => s.name)).toContain('rloo');
  expect(new Set(series.map((s) => s.method)).size).toBe(series.length);
});
