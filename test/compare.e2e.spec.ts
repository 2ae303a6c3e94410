import { CreditlabClient, newEventId } from '@creditlab/client';
import { ADMIN_KEY, gql, metric, startTestServer, type ServerProcess } from './support/test-server';
import { syntheticRun } from './support/synthetic-run';

/** `compare` against an independent computation of every statistic from the per-step rows it serves. */
let server: ServerProcess & { databaseUrl: string };
let runId: string;
const METHODS = [
  { name: 'grpo' },
  { name: 'gigpo', params: { gamma: 0.9 } },
  { name: 'gaca' },
  { name: 'gated-bepo' },
  { name: 'bipace' },
];

beforeAll(async () => {
  server = await startTestServer();
  runId = (
    await syntheticRun(server.url, 3, { groups: 6, groupSize: 8, maxSteps: 25, statesPerGroup: 10 })
  ).id;
});
afterAll(() => server.stop());

interface Row {
  iteration: number;
  groupId: string;
  trajectoryId: string;
  stepIndex: number;
  outcome: string;
  action: string;
  advantages: number[];
}
interface Slice {
  slice: string;
  steps: number;
  pearson: number | null;
  signAgreement: number | null;
}
interface Result {
  compare: {
    stepCount: number;
    iterations: number[];
    methods: { method: string; summary: Record<string, number>; rates: Record<string, unknown> }[];
    pairs: {
      a: string;
      b: string;
      pearson: number;
      spearman: number;
      groupPearson: number | null;
      groupsCorrelated: number;
      signAgreement: number | null;
      bothNonzero: number;
      zeroFractionA: number;
      zeroFractionB: number;
      byPosition: Slice[];
      byIteration: Slice[];
      disagreements: Row[];
    }[];
    againstEpisode: {
      method: string;
      against: number;
      goodInFailed: number;
      badInSucceeded: number;
      againstGrpoSign: number;
      byGroup: { iteration: number; groupId: string; against: number }[];
    }[];
    rows: { nodes: Row[]; pageInfo: { endCursor: string | null; hasNextPage: boolean } };
  };
}

async function fetchAll(): Promise<{ result: Result['compare']; rows: Row[] }> {
  const q = `query($run: ID!, $m: [MethodInput!]!, $after: String) { compare(runId: $run, methods: $m, disagreements: 3) {
    stepCount iterations methods { method summary { mean std min max p05 p25 p50 p75 p95 fractionPositive fractionZero } rates }
    pairs { a b pearson spearman groupPearson groupsCorrelated signAgreement bothNonzero zeroFractionA zeroFractionB
      byPosition { slice steps pearson signAgreement } byIteration { slice steps pearson signAgreement }
      disagreements { iteration groupId trajectoryId stepIndex action advantages } }
    againstEpisode { method against goodInFailed badInSucceeded againstGrpoSign byGroup { iteration groupId against } }
    rows(first: 1000, after: $after) { nodes { iteration groupId trajectoryId stepIndex outcome action advantages } pageInfo { endCursor hasNextPage } } } }`;
  const rows: Row[] = [];
  let after: string | null = null;
  let first: Result['compare'] | undefined;
  for (;;) {
    const res: { data?: Result; errors?: unknown } = await gql<Result>(server, q, {
      run: runId,
      m: METHODS,
      after,
    });
    if (res.errors) throw new Error(JSON.stringify(res.errors));
    first ??= res.data!.compare;
    rows.push(...res.data!.compare.rows.nodes);
    if (!res.data!.compare.rows.pageInfo.hasNextPage) break;
    after = res.data!.compare.rows.pageInfo.endCursor;
  }
  return { result: first, rows };
}

// Independent implementations (plain, sort-based) of what compare reports.
const avg = (x: number[]) => x.reduce((a, b) => a + b, 0) / x.length;
const sd = (x: number[]) => {
  const m = avg(x);
  return Math.sqrt(avg(x.map((v) => (v - m) ** 2)));
};
const q = (x: number[], p: number) => {
  const s = [...x].sort((a, b) => a - b);
  const pos = (s.length - 1) * p;
  return s[Math.floor(pos)]! + (s[Math.ceil(pos)]! - s[Math.floor(pos)]!) * (pos - Math.floor(pos));
};
const corr = (a: number[], b: number[]) => {
  const ma = avg(a);
  const mb = avg(b);
  const cov = a.reduce((s, v, i) => s + (v - ma) * (b[i]! - mb), 0);
  return (
    cov /
    Math.sqrt(a.reduce((s, v) => s + (v - ma) ** 2, 0) * b.reduce((s, v) => s + (v - mb) ** 2, 0))
  );
};
/** 1-based ranks, ties given the mean of the ranks they span. */
const rank = (x: number[]) => {
  const order = x.map((_, i) => i).sort((i, j) => x[i]! - x[j]!);
  const ranks = new Array<number>(x.length);
  for (let start = 0; start < order.length;) {
    let end = start + 1;
    while (end < order.length && x[order[end]!] === x[order[start]!]) end++;
    for (let k = start; k < end; k++) ranks[order[k]!] = (start + 1 + end) / 2;
    start = end;
  }
  return ranks;
};

test('summaries, correlations, sign agreement and the episode-sign analysis match an independent computation', async () => {
  const { result, rows } = await fetchAll();
  expect(rows).toHaveLength(result.stepCount);
  expect(result.iterations).toEqual([0, 1, 2]);
  const col = (m: number) => rows.map((r) => r.advantages[m]!);
  result.methods.forEach((m, i) => {
    const x = col(i);
    const want = {
      mean: avg(x),
      std: sd(x),
      min: Math.min(...x),
      max: Math.max(...x),
      p05: q(x, 0.05),
      p25: q(x, 0.25),
      p50: q(x, 0.5),
      p75: q(x, 0.75),
      p95: q(x, 0.95),
      fractionPositive: x.filter((v) => v > 0).length / x.length,
      fractionZero: x.filter((v) => v === 0).length / x.length,
    };
    for (const [k, v] of Object.entries(want)) expect(m.summary[k]).toBeCloseTo(v, 9);
  });
  expect(result.methods.map((m) => m.method)).toEqual(METHODS.map((m) => m.name));
  expect(result.methods[1]!.rates).toHaveProperty('singletonRate');
  expect(result.methods[3]!.rates).toHaveProperty('gateOnRate');
  expect(result.methods[2]!.rates).toHaveProperty('lambdaHistogram');
  expect(result.methods[4]!.rates).toHaveProperty('clusterCount');
  expect(result.pairs).toHaveLength(10);
  for (const p of result.pairs) {
    const a = col(METHODS.findIndex((m) => m.name === p.a));
    const b = col(METHODS.findIndex((m) => m.name === p.b));
    expect(p.pearson).toBeCloseTo(corr(a, b), 9);
    expect(p.spearman).toBeCloseTo(corr(rank(a), rank(b)), 9);
    // signs compared only where both are nonzero; zeros reported apart
    const both = a.map((v, i) => i).filter((i) => a[i] !== 0 && b[i] !== 0);
    expect(p.bothNonzero).toBe(both.length);
    expect(p.signAgreement).toBeCloseTo(
      both.filter((i) => Math.sign(a[i]!) === Math.sign(b[i]!)).length / both.length,
      12,
    );
    expect(p.zeroFractionA).toBeCloseTo(a.filter((v) => v === 0).length / a.length, 12);
    expect(p.zeroFractionB).toBeCloseTo(b.filter((v) => v === 0).length / b.length, 12);
    // within-group correlation: the mean over task groups of each group's Pearson correlation
    const groupKeys = [...new Set(rows.map((r) => `${r.iteration}/${r.groupId}`))];
    const within = groupKeys
      .map((g) => {
        const idx = rows
          .map((r, i) => i)
          .filter((i) => `${rows[i]!.iteration}/${rows[i]!.groupId}` === g);
        return corr(
          idx.map((i) => a[i]!),
          idx.map((i) => b[i]!),
        );
      })
      .filter((r) => Number.isFinite(r));
    expect(p.groupsCorrelated).toBe(within.length);
    expect(p.groupPearson!).toBeCloseTo(avg(within), 9);
    // breakdowns: every step in one position slice and one iteration slice; a slice's figures are its steps'
    expect(p.byPosition.reduce((n, x) => n + x.steps, 0)).toBe(rows.length);
    expect(p.byIteration.map((x) => x.slice)).toEqual([
      'iteration 0',
      'iteration 1',
      'iteration 2',
    ]);
    const first = rows.map((r, i) => i).filter((i) => rows[i]!.stepIndex === 0);
    expect(p.byPosition[0]).toMatchObject({ slice: 'step 0', steps: first.length });
    expect(p.byPosition[0]!.pearson!).toBeCloseTo(
      corr(
        first.map((i) => a[i]!),
        first.map((i) => b[i]!),
      ),
      9,
    );
    // The listed disagreements are the largest standardised gaps.
    const z = (x: number[]) => {
      const [m, s] = [avg(x), sd(x)];
      return x.map((v) => (v - m) / s);
    };
    const za = z(a);
    const zb = z(b);
    const gaps = rows.map((_, i) => Math.abs(za[i]! - zb[i]!)).sort((x, y) => y - x);
    const listed = p.disagreements.map((d) =>
      rows.findIndex(
        (r) =>
          r.iteration === d.iteration &&
          r.trajectoryId === d.trajectoryId &&
          r.stepIndex === d.stepIndex,
      ),
    );
    expect(listed.map((i) => Math.abs(za[i]! - zb[i]!))).toEqual(
      gaps.slice(0, 3).map((g) => expect.closeTo(g, 9)),
    );
  }
  const episode = col(0); // grpo at its defaults is also the episode-level baseline
  const succeeded = rows.map((r) => r.outcome === 'success');
  result.againstEpisode.forEach((e, m) => {
    const x = col(m);
    // against the episode: judged by the trajectory's outcome
    const good = x.filter((v, i) => v > 0 && !succeeded[i]).length;
    const bad = x.filter((v, i) => v < 0 && succeeded[i]).length;
    expect({
      against: e.against,
      goodInFailed: e.goodInFailed,
      badInSucceeded: e.badInSucceeded,
    }).toEqual({ against: good + bad, goodInFailed: good, badInSucceeded: bad });
    expect(e.byGroup.reduce((n, g) => n + g.against, 0)).toBe(good + bad);
    // the GRPO-sign variant, named as such
    expect(e.againstGrpoSign).toBe(
      x.filter((v, i) => v !== 0 && episode[i] !== 0 && v > 0 !== episode[i]! > 0).length,
    );
  });
  expect(result.againstEpisode[0]!.againstGrpoSign).toBe(0);
  expect(result.againstEpisode[1]!.againstGrpoSign).toBeGreaterThan(0); // GiGPO does move credit against GRPO's sign
});

test('with its sets stored, compare reads an iteration once, whatever the number of methods', async () => {
  const cost = async (methods: typeof METHODS) => {
    const q = `query($run: ID!, $m: [MethodInput!]!) { compare(runId: $run, methods: $m, iterations: [1]) {
      stepCount pairs { pearson } } }`;
    await gql(server, q, { run: runId, m: methods }); // every set stored (the first test may not have run)
    const before = await metric(server, 'creditlab_db_statements_total');
    const res = await gql<{ compare: { stepCount: number } }>(server, q, {
      run: runId,
      m: methods,
    });
    expect(res.errors).toBeUndefined();
    return (await metric(server, 'creditlab_db_statements_total')) - before;
  };
  const two = await cost(METHODS.slice(0, 2));
  const five = await cost(METHODS);
  // A method more costs the lookup of its set, one statement. The sets' stored versions are read
  // together with the iteration's shape: read one by one, each set read that shape again (two
  // statements more per method).
  expect(five - two).toBe(3);
});

test('the steps compare lists are found in trajectories stored in several slices', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'sliced', env: 'synthetic', method: 'grpo' });
  // Two trajectories of one task, each streamed in three events: three slices each.
  const events = ['a', 'b'].flatMap((t, ti) =>
    [0, 1, 2].map((slice) => ({
      id: newEventId(),
      type: 'steps.appended' as const,
      data: {
        iteration: 0,
        groupId: 'g',
        trajectoryId: t,
        firstStepIndex: slice * 2,
        steps: [0, 1].map((j) => ({
          state: `${t} state ${slice * 2 + j}`,
          action: `${t} action ${slice * 2 + j}`,
          reward: ti === 0 && slice === 2 && j === 1 ? 1 : 0,
        })),
      },
    })),
  );
  await client.appendEvents(id, events);
  const res = await gql<{
    compare: { rows: { nodes: { trajectoryId: string; stepIndex: number; action: string }[] } };
  }>(
    server,
    `query($run: ID!) { compare(runId: $run, methods: [{ name: "grpo" }]) {
      rows(first: 100) { nodes { trajectoryId stepIndex action } } } }`,
    { run: id },
  );
  expect(res.errors).toBeUndefined();
  const nodes = res.data!.compare.rows.nodes;
  expect(nodes).toHaveLength(12);
  for (const n of nodes) expect(n.action).toBe(`${n.trajectoryId} action ${n.stepIndex}`);
});

test('a run without rollouts has nothing to compare, and says so', async () => {
  const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({ name: 'empty', env: 'synthetic', method: 'grpo' });
  const res = await gql(
    server,
    `query($run: ID!) { compare(runId: $run, methods: [{ name: "grpo" }]) { stepCount methods { summary { mean } } } }`,
    { run: id },
  );
  // It was an internal error: the summary's mean of no steps is NaN, which a GraphQL Float cannot carry.
  expect(res.errors?.[0]).toMatchObject({
    message: `run ${id} has no rollouts yet: there is nothing to compare`,
    extensions: { code: 'BAD_USER_INPUT' },
  });
});
