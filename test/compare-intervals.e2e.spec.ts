import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { seededRandom } from '@creditlab/random';
import { syntheticBatchJson } from '../libs/estimators/test/support/synthetic-rollouts';
import { ADMIN_KEY, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * `compare { intervals }` against a group bootstrap written here from the rows the server serves:
 * the same seeded stream (libs/random) picks the task groups, and every score is recomputed on the
 * resampled steps by plain loops.
 */
let server: ServerProcess & { databaseUrl: string };
let runId: string;
/** The reference each step carries (field "oracle"), by step key. */
const oracle = new Map<string, number>();
const METHODS = [{ name: 'grpo' }, { name: 'gigpo' }, { name: 'gaca' }];
const key = (r: { iteration: number; trajectoryId: string; stepIndex: number }) =>
  `${r.iteration}/${r.trajectoryId}/${r.stepIndex}`;

beforeAll(async () => {
  server = await startTestServer();
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  runId = (await client.createRun({ name: 'reference', env: 'synthetic', method: 'grpo' })).id;
  const shape = { groups: 6, groupSize: 8, maxSteps: 12, statesPerGroup: 6 };
  for (let it = 0; it < 3; it++) {
    const batch = syntheticBatchJson(shape, 300 + it);
    for (const g of batch.groups)
      for (const t of g.trajectories)
        t.steps.forEach((st, i) => {
          // Signed by the outcome, exactly 0 on every fifth step, multiples of 1/8 (exact in float32).
          const v =
            (i + g.id.length) % 5 === 0
              ? 0
              : ((t.outcome === 'success' ? 1 : -1) * (1 + (i % 4))) / 8;
          oracle.set(key({ iteration: it, trajectoryId: t.id, stepIndex: i }), v);
          Object.assign(st, { oracle: v });
        });
    await client.appendEvents(runId, rolloutEvents(it, batch));
  }
});
afterAll(() => server.stop());

interface Iv {
  estimate: number | null;
  low: number | null;
  high: number | null;
}
interface Scores {
  a: string;
  b: string;
  pearson: Iv;
  spearman: Iv;
  groupPearson: Iv;
  groupSpearman: Iv;
  signAgreement: Iv;
}
interface Row {
  iteration: number;
  groupId: string;
  trajectoryId: string;
  stepIndex: number;
  advantages: number[];
}

const PAIRS: [number, number][] = [
  [0, 1],
  [0, 2],
  [1, 2],
];
const NAMES = ['pearson', 'spearman', 'groupPearson', 'groupSpearman', 'signAgreement'] as const;
const SCORES = NAMES.map((name) => `${name} { estimate low high }`).join(' ');

async function ask(seed: number, resamples: number, methods = METHODS) {
  const res = await gql<{
    compare: {
      pairs: { a: string; b: string; pearson: number; signAgreement: number }[];
      againstReference: {
        method: string;
        steps: number;
        pearson: number;
        groupPearson: number;
        groupSpearman: number;
        signAgreement: number;
        zeroFractionB: number;
      }[];
      rows: { nodes: Row[]; pageInfo: { hasNextPage: boolean } };
      intervals: {
        resamples: number;
        level: number;
        groups: number;
        pairs: Scores[];
        againstReference: Scores[];
        referenceDifferences: Scores[];
      };
    };
  }>(
    server,
    `query($run: ID!, $m: [MethodInput!]!, $seed: Int!, $b: Int!) { compare(runId: $run, methods: $m) {
      pairs { a b pearson signAgreement }
      againstReference(field: "oracle") { method steps pearson groupPearson groupSpearman signAgreement zeroFractionB }
      rows(first: 1000) { nodes { iteration groupId trajectoryId stepIndex advantages } pageInfo { hasNextPage } }
      intervals(resamples: $b, seed: $seed, field: "oracle") { resamples level groups
        pairs { a b ${SCORES} } againstReference { a b ${SCORES} } referenceDifferences { a b ${SCORES} } } } }`,
    { run: runId, m: methods, seed, b: resamples },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data!.compare;
}

// Plain implementations of the scores (sort-based ranks, two-pass correlations).
const avg = (x: number[]) => x.reduce((s, v) => s + v, 0) / x.length;
function corr(a: number[], b: number[]): number {
  const ma = avg(a);
  const mb = avg(b);
  let cov = 0;
  let va = 0;
  let vb = 0;
  a.forEach((v, i) => {
    cov += (v - ma) * (b[i]! - mb);
    va += (v - ma) ** 2;
    vb += (b[i]! - mb) ** 2;
  });
  return va > 1e-24 && vb > 1e-24 ? cov / Math.sqrt(va * vb) : NaN;
}
const rank = (x: number[]) =>
  x.map((v) => x.filter((w) => w < v).length + (x.filter((w) => w === v).length + 1) / 2);
function sign(a: number[], b: number[]): number {
  const both = a.map((_, i) => i).filter((i) => a[i] !== 0 && b[i] !== 0);
  return both.length ? both.filter((i) => a[i]! > 0 === b[i]! > 0).length / both.length : NaN;
}
function percentile(values: number[], q: number): number {
  const s = [...values].sort((x, y) => x - y);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.ceil(pos)]! - s[lo]!) * (pos - lo);
}

interface Series {
  values: number[];
  /** Ranks over all steps, held fixed across resamples (as documented). */
  ranks: number[];
}
const series = (values: number[]): Series => ({ values, ranks: rank(values) });

/** The scores of (a, b), in NAMES order, on a multiset of groups (each group's steps listed once per pick). */
function scoresOn(picks: number[], members: number[][], a: Series, b: Series) {
  const idx = picks.flatMap((g) => members[g]!);
  const at = (x: number[], ks: number[]) => ks.map((k) => x[k]!);
  // the mean over the picked groups of each group's correlation (ranks taken within the group)
  const within = (r: (x: number[]) => number[]) => {
    const rs = picks
      .map((g) => corr(r(at(a.values, members[g]!)), r(at(b.values, members[g]!))))
      .filter((v) => !Number.isNaN(v));
    return rs.length ? avg(rs) : NaN;
  };
  return [
    corr(at(a.values, idx), at(b.values, idx)),
    corr(at(a.ranks, idx), at(b.ranks, idx)),
    within((x) => x),
    within(rank),
    sign(at(a.values, idx), at(b.values, idx)),
  ];
}

function expectInterval(got: Iv, estimate: number, draws: number[]): void {
  expect(got.estimate).toBeCloseTo(estimate, 9);
  const defined = draws.filter((v) => !Number.isNaN(v));
  expect(defined.length).toBeGreaterThanOrEqual(0.95 * draws.length);
  expect(got.low).toBeCloseTo(percentile(defined, 0.025), 9);
  expect(got.high).toBeCloseTo(percentile(defined, 0.975), 9);
}

test('every interval (pairs, each method against the reference, every difference of two methods) matches a group bootstrap recomputed from the rows', async () => {
  const B = 200;
  const got = await ask(7, B);
  const rows = got.rows.nodes;
  expect(got.rows.pageInfo.hasNextPage).toBe(false);
  // task groups in row order: (iteration, group id)
  const members: number[][] = [];
  const groupIndex = new Map<string, number>();
  rows.forEach((r, k) => {
    const g = `${r.iteration}/${r.groupId}`;
    if (!groupIndex.has(g)) groupIndex.set(g, members.push([]) - 1);
    members[groupIndex.get(g)!]!.push(k);
  });
  const G = members.length;
  expect(got.intervals).toMatchObject({ resamples: B, level: 0.95, groups: G });
  expect(G).toBe(18);
  const all = members.map((_, g) => g);
  const rand = seededRandom(7);
  const resamples = Array.from({ length: B }, () =>
    Array.from({ length: G }, () => Math.floor(rand() * G)),
  );
  const cols = METHODS.map((_, m) => series(rows.map((r) => r.advantages[m]!)));
  const col = (m: number) => cols[m]!;
  const refValues = rows.map((r) => oracle.get(key(r))!);
  const ref = series(refValues);
  const check = (got: Scores, a: Series, b: Series) => {
    const draws = resamples.map((picks) => scoresOn(picks, members, a, b));
    scoresOn(all, members, a, b).forEach((estimate, s) => {
      const name = NAMES[s]!;
      expectInterval(
        got[name],
        estimate,
        draws.map((d) => d[s]!),
      );
    });
    return draws;
  };
  got.intervals.pairs.forEach((p, i) => {
    const [a, b] = PAIRS[i]!;
    expect([p.a, p.b]).toEqual([METHODS[a]!.name, METHODS[b]!.name]);
    check(p, col(a), col(b));
  });
  const perMethod = got.intervals.againstReference.map((p, m) => {
    expect([p.a, p.b]).toEqual([METHODS[m]!.name, 'oracle']);
    const reported = got.againstReference[m]!;
    expect(reported.steps).toBe(rows.length);
    expect(reported.zeroFractionB).toBeCloseTo(
      refValues.filter((v) => v === 0).length / refValues.length,
      12,
    );
    expect(p.pearson.estimate).toBeCloseTo(reported.pearson, 9);
    expect(p.groupPearson.estimate).toBeCloseTo(reported.groupPearson, 9);
    expect(p.groupSpearman.estimate).toBeCloseTo(reported.groupSpearman, 9);
    return check(p, col(m), ref);
  });
  // a − b on the same resamples: the interval of the difference, not the difference of intervals
  got.intervals.referenceDifferences.forEach((d, i) => {
    const [a, b] = PAIRS[i]!;
    expect([d.a, d.b]).toEqual([METHODS[a]!.name, METHODS[b]!.name]);
    const ea = scoresOn(all, members, col(a), ref);
    const eb = scoresOn(all, members, col(b), ref);
    NAMES.forEach((name, s) =>
      expectInterval(
        d[name],
        ea[s]! - eb[s]!,
        perMethod[a]!.map((draw, r) => draw[s]! - perMethod[b]![r]![s]!),
      ),
    );
  });
});

test('intervals: the same seed gives the same intervals, another seed others; a method against itself agrees on every resample; resamples out of range are refused', async () => {
  const one = await ask(1, 300);
  expect(await ask(1, 300)).toEqual(one);
  expect((await ask(2, 300)).intervals).not.toEqual(one.intervals);
  // grpo listed twice: the pair of a method with itself, and their difference against the reference
  const twice = await ask(1, 100, [...METHODS, { name: 'grpo' }]);
  const self = twice.intervals.pairs.find((p) => p.a === 'grpo#0' && p.b === 'grpo#3')!;
  expect(self.pearson).toEqual({ estimate: 1, low: 1, high: 1 });
  const diff = twice.intervals.referenceDifferences.find(
    (p) => p.a === 'grpo#0' && p.b === 'grpo#3',
  )!;
  expect(diff.groupPearson).toEqual({ estimate: 0, low: 0, high: 0 });
  await expect(ask(1, 5)).rejects.toThrow(/resamples must be an integer from 100 to 10000/);
});

test('every side says its place in methods, which tells apart a method compared under two parameter sets', async () => {
  const methods = [{ name: 'gigpo', params: { gamma: 0.5 } }, { name: 'grpo' }, { name: 'gigpo' }];
  const res = await gql<{
    compare: {
      methods: { method: string; params: { gamma?: number } }[];
      pairs: { a: string; b: string; aIndex: number; bIndex: number; pearson: number }[];
      againstReference: { method: string; methodIndex: number }[];
      againstEpisode: { method: string; methodIndex: number }[];
      rows: { nodes: Row[] };
      intervals: {
        pairs: { a: string; aIndex: number; bIndex: number | null }[];
        againstReference: { a: string; b: string; aIndex: number; bIndex: number | null }[];
        referenceDifferences: { a: string; aIndex: number; bIndex: number }[];
      };
    };
  }>(
    server,
    `query($run: ID!, $m: [MethodInput!]!) { compare(runId: $run, methods: $m) {
      methods { method params } pairs { a b aIndex bIndex pearson }
      againstReference(field: "oracle") { method methodIndex } againstEpisode { method methodIndex }
      rows(first: 1000) { nodes { iteration groupId trajectoryId stepIndex advantages } }
      intervals(resamples: 100, field: "oracle") { pairs { a aIndex bIndex }
        againstReference { a b aIndex bIndex } referenceDifferences { a aIndex bIndex } } } }`,
    { run: runId, m: methods },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  const c = res.data!.compare;
  const names = ['gigpo#0', 'grpo', 'gigpo#2'];
  expect(c.methods.map((m) => m.params.gamma)).toEqual([0.5, undefined, 0.95]);
  expect(c.pairs.map((p) => [p.a, p.b, p.aIndex, p.bIndex])).toEqual([
    ['gigpo#0', 'grpo', 0, 1],
    ['gigpo#0', 'gigpo#2', 0, 2],
    ['grpo', 'gigpo#2', 1, 2],
  ]);
  // A pair's figures are those of the columns its positions name.
  const column = (i: number) => c.rows.nodes.map((r) => r.advantages[i]!);
  for (const p of c.pairs)
    expect(p.pearson).toBeCloseTo(corr(column(p.aIndex), column(p.bIndex)), 5);
  for (const rows of [c.againstReference, c.againstEpisode])
    expect(rows.map((r) => [r.method, r.methodIndex])).toEqual(names.map((n, i) => [n, i]));
  expect(c.intervals.pairs.map((p) => [p.a, p.aIndex, p.bIndex])).toEqual([
    ['gigpo#0', 0, 1],
    ['gigpo#0', 0, 2],
    ['grpo', 1, 2],
  ]);
  expect(c.intervals.againstReference.map((r) => [r.a, r.b, r.aIndex, r.bIndex])).toEqual(
    names.map((n, i) => [n, 'oracle', i, null]),
  );
  expect(c.intervals.referenceDifferences.map((d) => [d.a, d.aIndex, d.bIndex])).toEqual(
    c.intervals.pairs.map((p) => [p.a, p.aIndex, p.bIndex]),
  );
});

test('a pair that agrees on every step lists no disagreements; one that differs lists them', async () => {
  const res = await gql<{
    compare: { pairs: { a: string; b: string; disagreements: { advantages: number[] }[] }[] };
  }>(
    server,
    `query($run: ID!) { compare(runId: $run, methods: [{ name: "grpo" }, { name: "grpo" }, { name: "gigpo" },
        { name: "rloo" }, { name: "grpo", params: { normalize: "mean" } }], disagreements: 10) {
      pairs { a b disagreements { advantages } } } }`,
    { run: runId },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  const pairs = res.data!.compare.pairs;
  const [same, differ] = pairs;
  expect([same!.a, same!.b, same!.disagreements]).toEqual(['grpo#0', 'grpo#1', []]);
  expect(differ!.disagreements).toHaveLength(10);
  // RLOO is GRPO's mean-centred advantage × G/(G − 1) in groups of G: equal once standardised, to
  // float32's rounding (it listed ten steps of "1 against 0.875").
  const rescaled = pairs.find((p) => p.a === 'rloo' && p.b === 'grpo#4')!;
  expect(rescaled.disagreements).toEqual([]);
});
