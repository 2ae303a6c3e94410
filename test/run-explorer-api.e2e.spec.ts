import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import { columnarBatchFromJson, estimate, type RolloutBatch } from '@creditlab/estimators';
import { parse } from 'csv-parse/sync';
import { parquetReadObjects } from 'hyparquet';
import { fixtureBatches } from './support/fixture-batches';
import { rowCounts } from './support/row-counts';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * The API the web app stands on: run filters, sorts and totals, lineage, metric series, lookups
 * by id, jobs of a run, server-side histograms and densities, and the streaming export.
 */
let server: ServerProcess & { databaseUrl: string };
let admin: CreditlabClient;
let readKey: string;
const batches = fixtureBatches().map(([, b]) => b);
const [first, second] = [batches[0]!, batches[1]!];
let parentId: string;
let forkId: string;
let retrainId: string;
let otherId: string;

async function read<T>(query: string, variables: Record<string, unknown> = {}, key = ADMIN_KEY) {
  const res = await gql<T>(server, query, variables, key);
  expect(res.errors).toBeUndefined();
  return res.data!;
}

beforeAll(async () => {
  // One export at a time, so that a second one while another streams is seen refused.
  server = await startTestServer({ CREDITLAB_EXPORT_CONCURRENCY: '1' });
  admin = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
  await read('mutation { createProject(name: "explorer") { name } }');
  await read('mutation { createProject(name: "elsewhere") { name } }');
  readKey = (
    await read<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: { project: "explorer", role: read }) { key } }',
    )
  ).createApiKey.key;
  const run = (name: string, method: string, extra: Record<string, unknown> = {}) =>
    admin.createRun({ name, project: 'explorer', env: 'sokoban', method, ...extra });
  parentId = (await run('Baseline GRPO', 'grpo')).id;
  await admin.appendEvents(parentId, [
    ...rolloutEvents(0, first),
    ...rolloutEvents(1, second),
    {
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: 0, metrics: { loss: 2, successRate: 0.25 } },
    },
    {
      id: newEventId(),
      type: 'metrics.logged',
      data: { iteration: 1, metrics: { loss: 1, successRate: 0.5 } },
    },
    { id: newEventId(), type: 'evaluation.logged', data: { iteration: 1, successRate: 0.75 } },
  ]);
  forkId = (await run('fork to gigpo', 'gigpo', { parentRunId: parentId, forkIteration: 1 })).id;
  retrainId = (
    await run('retrain under gaca', 'gaca', {
      parentRunId: parentId,
      config: { retrainOf: parentId },
    })
  ).id;
  await admin.appendEvents(forkId, [
    { id: newEventId(), type: 'run.finished', data: { status: 'failed' } },
  ]);
  otherId = (
    await admin.createRun({
      name: 'baseline elsewhere',
      project: 'elsewhere',
      env: 'e',
      method: 'grpo',
    })
  ).id;
});
afterAll(() => server.stop());

type Page = {
  runs: {
    totalCount: number;
    nodes: { id: string; name: string }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
};
const RUNS = `query($filter: RunFilter, $sort: RunSort! = CREATED_DESC, $first: Int, $after: String) {
  runs(filter: $filter, sort: $sort, first: $first, after: $after) {
    totalCount nodes { id name } pageInfo { hasNextPage endCursor } } }`;
const names = async (filter: Record<string, unknown>, sort = 'CREATED_DESC') =>
  (await read<Page>(RUNS, { filter: { project: 'explorer', ...filter }, sort })).runs.nodes.map(
    (r) => r.name,
  );

test('runs: name search, any-of methods, statuses, created range and parent', async () => {
  expect(await names({ nameContains: 'BASELINE' })).toEqual(['Baseline GRPO']);
  // Searched as written: % and _ are characters, not LIKE's wildcards.
  expect(await names({ nameContains: 'to_gigpo' })).toEqual([]);
  expect(await names({ nameContains: '%' })).toEqual([]);
  expect(await names({ nameContains: 'e_under' })).toEqual([]);
  expect(await names({ nameContains: '\\' })).toEqual([]);
  // …and a name holding them is still found by them.
  const odd = await admin.createRun({
    name: '50%_done\\x',
    project: 'like',
    env: 'e',
    method: 'grpo',
  });
  const found = await read<Page>(RUNS, { filter: { project: 'like', nameContains: '%_DONE\\' } });
  expect(found.runs.nodes.map((r) => r.id)).toEqual([odd.id]);
  expect(await names({ methods: ['gigpo', 'gaca'] })).toEqual([
    'retrain under gaca',
    'fork to gigpo',
  ]);
  expect(await names({ status: ['FAILED'] })).toEqual(['fork to gigpo']);
  expect(await names({ status: ['RUNNING', 'FAILED'] })).toHaveLength(3);
  expect(await names({ parentRunId: parentId })).toEqual(['retrain under gaca', 'fork to gigpo']);
  const { run } = await read<{ run: { createdAt: string } }>(
    'query($id: ID!) { run(id: $id) { createdAt } }',
    { id: forkId },
  );
  expect(await names({ createdAfter: run.createdAt })).toEqual([
    'retrain under gaca',
    'fork to gigpo',
  ]);
  expect(await names({ createdBefore: run.createdAt })).toEqual(['Baseline GRPO']);
});

test('runs: a filter field given as null filters nothing (it was a 500)', async () => {
  const all = await names({});
  const res = await gql<Page>(server, RUNS, {
    filter: { project: 'explorer', env: null, method: null, nameContains: null, tags: null },
  });
  expect(res.errors).toBeUndefined();
  expect(res.data!.runs.nodes.map((r) => r.name)).toEqual(all);
  const noProject = await gql<Page>(server, RUNS, { filter: { project: null } });
  expect(noProject.errors).toBeUndefined();
});

test('runs: a status outside the enum is refused by name, not answered with nothing', async () => {
  const res = await gql(server, RUNS, { filter: { status: ['done'] } });
  expect(res.errors?.[0]?.message).toMatch(/RunStatus/);
  expect(res.errors?.[0]?.message).toMatch(/"done"/);
  expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(res.data).toBeUndefined();
  const date = await gql(server, RUNS, { filter: { createdAfter: 'last tuesday' } });
  expect(date.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(date.errors?.[0]?.message).toMatch(/createdAfter/);
});

test('runs: each sort order pages through every run once, and totalCount counts every page', async () => {
  for (const [sort, expected] of [
    ['NAME_ASC', ['Baseline GRPO', 'fork to gigpo', 'retrain under gaca']],
    ['CREATED_ASC', ['Baseline GRPO', 'fork to gigpo', 'retrain under gaca']],
  ] as const) {
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const { runs }: Page = await read<Page>(RUNS, {
        filter: { project: 'explorer' },
        sort,
        first: 1,
        after,
      });
      expect(runs.totalCount).toBe(3);
      seen.push(...runs.nodes.map((r) => r.name));
      if (!runs.pageInfo.hasNextPage) break;
      after = runs.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);
  }
  const { runs } = await read<Page>(RUNS, { sort: 'NAME_ASC', first: 1 });
  const mixed = await gql(server, RUNS, { sort: 'CREATED_ASC', after: runs.pageInfo.endCursor });
  expect(mixed.errors?.[0]?.message).toBe('runs: "after" is a cursor of another sort order');
  // The sort a user sees with most-advanced runs first.
  expect((await names({}, 'LAST_ITERATION_DESC'))[0]).toBe('Baseline GRPO');
});

test('runs sorted by the last value of a metric: highest or lowest first, runs without it last, paged without gaps', async () => {
  await read('mutation { createProject(name: "sorted") { name } }');
  // Each run's successRate by iteration (the last one counts, not the best), and held-out success.
  const histories: [string, number[], number | null][] = [
    ['fell', [0.9, 0.3], null],
    ['tie one', [0.6], 0.2],
    ['tie two', [0.6], null],
    ['loss only', [], 0.9],
    ['best', [0.1, 0.8], 0.1],
    ['nothing', [], null],
  ];
  for (const [name, rates, heldOut] of histories) {
    const id = (await admin.createRun({ name, project: 'sorted', env: 'e', method: 'grpo' })).id;
    await admin.appendEvents(id, [
      { id: newEventId(), type: 'metrics.logged', data: { iteration: 0, metrics: { loss: 1 } } },
      ...rates.map((successRate, iteration) => ({
        id: newEventId(),
        type: 'metrics.logged' as const,
        data: { iteration, metrics: { successRate } },
      })),
      ...(heldOut === null
        ? []
        : [
            {
              id: newEventId(),
              type: 'evaluation.logged' as const,
              data: { iteration: 0, successRate: heldOut },
            },
          ]),
    ]);
  }
  const SORTED = `query($sort: RunSort!, $metric: String, $first: Int, $after: String) {
    runs(filter: { project: "sorted" }, sort: $sort, sortMetric: $metric, first: $first, after: $after) {
      totalCount nodes { name } pageInfo { hasNextPage endCursor } } }`;
  const walk = async (sort: string, metric: string) => {
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const { runs }: Page = await read<Page>(SORTED, { sort, metric, first: 2, after });
      expect(runs.totalCount).toBe(6);
      seen.push(...runs.nodes.map((r) => r.name));
      if (!runs.pageInfo.hasNextPage) return seen;
      after = runs.pageInfo.endCursor;
    }
  };
  // Ties and runs without the metric come newest first, whichever the direction (created in the
  // order of the list above).
  expect(await walk('METRIC_DESC', 'successRate')).toEqual([
    'best',
    'tie two',
    'tie one',
    'fell',
    'nothing',
    'loss only',
  ]);
  expect(await walk('METRIC_ASC', 'successRate')).toEqual([
    'fell',
    'tie two',
    'tie one',
    'best',
    'nothing',
    'loss only',
  ]);
  expect(await walk('METRIC_DESC', 'evaluation.successRate')).toEqual([
    'loss only',
    'tie one',
    'best',
    'nothing',
    'tie two',
    'fell',
  ]);
  // A value logged late for an earlier iteration is not the run's last.
  const late = (
    await admin.createRun({ name: 'late', project: 'sorted', env: 'e', method: 'grpo' })
  ).id;
  for (const [iteration, successRate] of [
    [1, 0.4],
    [0, 0.95],
  ] as const)
    await admin.appendEvents(late, [
      {
        id: newEventId(),
        type: 'metrics.logged',
        data: { iteration, metrics: { successRate } },
      },
    ]);
  const lastOf = await read<{ run: { lastTrainingSuccess: number } }>(
    'query($id: ID!) { run(id: $id) { lastTrainingSuccess } }',
    { id: late },
  );
  expect(lastOf.run.lastTrainingSuccess).toBe(0.4);
  // Asked wrongly: said what is missing, and a cursor of one metric is not taken for another.
  const empty = await gql(server, SORTED, { sort: 'METRIC_DESC', metric: ' ' });
  expect(empty.errors?.[0]?.message).toBe(
    'runs: sortMetric is empty; name a metric the runs log, e.g. "successRate"',
  );
  const missing = await gql(server, SORTED, { sort: 'METRIC_DESC' });
  expect(missing.errors?.[0]?.message).toBe(
    'runs: sort METRIC_DESC needs sortMetric, the metric to sort by (e.g. "successRate")',
  );
  const stray = await gql(server, SORTED, { sort: 'NAME_ASC', metric: 'loss' });
  expect(stray.errors?.[0]?.message).toBe(
    'runs: sortMetric goes with sort METRIC_DESC or METRIC_ASC, not NAME_ASC',
  );
  const page = await read<Page>(SORTED, { sort: 'METRIC_DESC', metric: 'successRate', first: 1 });
  const other = await gql(server, SORTED, {
    sort: 'METRIC_DESC',
    metric: 'loss',
    after: page.runs.pageInfo.endCursor,
  });
  expect(other.errors?.[0]?.message).toBe(
    'runs: "after" is a cursor of another sort order or sortMetric',
  );
  // A cursor whose time is not one PostgreSQL wrote is the caller's mistake, not a 500.
  const [id] = JSON.parse(Buffer.from(page.runs.pageInfo.endCursor!, 'base64url').toString());
  for (const time of ['yesterday', '2026-02-31 10:00:00+00']) {
    const forged = Buffer.from(
      JSON.stringify([id, 'metric-desc', 'successRate', 0.5, time]),
    ).toString('base64url');
    const refused = await gql(server, SORTED, {
      sort: 'METRIC_DESC',
      metric: 'successRate',
      after: forged,
    });
    expect(refused.errors?.[0]?.message).toBe('runs: "after" is not a cursor this API issued');
  }
});

test('runs by the start of their id: with or without hyphens, any case, within the other filters; text no id starts with is refused', async () => {
  const byPrefix = async (idPrefix: string, filter: Record<string, unknown> = {}) =>
    (
      await read<{ runs: { nodes: { id: string }[] } }>(
        'query($f: RunFilter) { runs(filter: $f, first: 100) { nodes { id } } }',
        { f: { ...filter, idPrefix } },
      )
    ).runs.nodes.map((r) => r.id);
  const { runs } = await read<{ runs: { nodes: { id: string }[] } }>(
    '{ runs(first: 100) { nodes { id } } }',
  );
  const all = runs.nodes.map((r) => r.id);
  const startingWith = (hex: string) => all.filter((id) => id.replace(/-/g, '').startsWith(hex));
  for (const prefix of [
    forkId.slice(0, 8),
    forkId.slice(0, 13),
    forkId.replace(/-/g, '').slice(0, 12).toUpperCase(),
    forkId,
    forkId.slice(0, 1),
  ])
    expect((await byPrefix(prefix)).sort()).toEqual(
      startingWith(prefix.replace(/-/g, '').toLowerCase()).sort(),
    );
  expect(await byPrefix(forkId.slice(0, 8))).toContain(forkId);
  expect(await byPrefix(forkId, { project: 'elsewhere' })).toEqual([]);
  for (const bad of ['xyz', `${forkId}0`]) {
    const res = await gql(server, 'query($f: RunFilter) { runs(filter: $f) { nodes { id } } }', {
      f: { idPrefix: bad },
    });
    expect(res.errors?.[0]?.message).toMatch(/^runs: idPrefix must be the start of a run id/);
  }
});

test('a run: its parent, its children oldest first, and its last training and held-out success', async () => {
  const { run } = await read<{
    run: {
      lastTrainingSuccess: number;
      lastEvaluationSuccess: number;
      children: { id: string; parent: { id: string } }[];
    };
  }>(
    `query($id: ID!) { run(id: $id) { lastTrainingSuccess lastEvaluationSuccess
       children { id parent { id } } } }`,
    { id: parentId },
  );
  expect(run.lastTrainingSuccess).toBe(0.5);
  expect(run.lastEvaluationSuccess).toBe(0.75);
  expect(run.children.map((c) => c.id)).toEqual([forkId, retrainId]);
  expect(run.children.every((c) => c.parent.id === parentId)).toBe(true);
  const fork = await read<{
    run: { parent: { name: string }; children: unknown[]; lastTrainingSuccess: null };
  }>('query($id: ID!) { run(id: $id) { parent { name } children { id } lastTrainingSuccess } }', {
    id: forkId,
  });
  expect(fork.run).toEqual({
    parent: { name: 'Baseline GRPO' },
    children: [],
    lastTrainingSuccess: null,
  });
});

test('iterationCount: the iterations that hold rollouts, where lastIteration also counts a later checkpoint', async () => {
  // In a project of its own: the tests above count the explorer's runs.
  const { id } = await admin.createRun({
    name: 'from 4',
    project: 'counting',
    env: 'e',
    method: 'grpo',
  });
  await admin.appendEvents(id, [
    ...rolloutEvents(4, first), // as a fork from iteration 4 starts
    ...rolloutEvents(5, second),
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 5, metrics: { loss: 1 } } },
    { id: newEventId(), type: 'checkpoint.saved', data: { iteration: 6, uri: 's3://b/6' } },
  ]);
  const runs = await read<{
    runs: { nodes: { id: string; lastIteration: number; iterationCount: number }[] };
  }>('{ runs(first: 100) { nodes { id lastIteration iterationCount } } }');
  const byId = new Map(runs.runs.nodes.map((r) => [r.id, r]));
  expect(byId.get(id)).toMatchObject({ lastIteration: 6, iterationCount: 2 });
  expect(byId.get(parentId)).toMatchObject({ lastIteration: 1, iterationCount: 2 });
  expect(byId.get(forkId)).toMatchObject({ iterationCount: 0 });
  await admin.appendEvents(id, [
    { id: newEventId(), type: 'run.finished', data: { status: 'completed' } },
  ]);
});

test('metricSeries: every logged metric and held-out success per iteration, only runs the key sees', async () => {
  const { metricSeries } = await read<{
    metricSeries: {
      runId: string;
      runName: string;
      series: { name: string; points: { iteration: number; value: number }[] }[];
    }[];
  }>(
    'query($ids: [ID!]!) { metricSeries(runIds: $ids) { runId runName series { name points { iteration value } } } }',
    { ids: [parentId, forkId, otherId] },
    readKey,
  );
  expect(metricSeries.map((s) => s.runId)).toEqual([parentId, forkId]);
  const byName = Object.fromEntries(metricSeries[0]!.series.map((s) => [s.name, s.points]));
  expect(byName).toEqual({
    loss: [
      { iteration: 0, value: 2 },
      { iteration: 1, value: 1 },
    ],
    successRate: [
      { iteration: 0, value: 0.25 },
      { iteration: 1, value: 0.5 },
    ],
    'evaluation.successRate': [{ iteration: 1, value: 0.75 }],
  });
  expect(metricSeries[1]!.series).toEqual([]);
  const only = await read<{ metricSeries: { series: { name: string }[] }[] }>(
    'query($ids: [ID!]!) { metricSeries(runIds: $ids, names: ["loss"]) { series { name } } }',
    { ids: [parentId] },
  );
  expect(only.metricSeries[0]!.series.map((s) => s.name)).toEqual(['loss']);
});

test('a group and a trajectory by id equal what the page of groups shows', async () => {
  const group = second.groups[1]!;
  const trajectory = group.trajectories[0]!;
  const TRAJECTORY = 'id outcome return length steps { index state action reward }';
  const data = await read<{
    run: {
      groups: { nodes: { id: string; trajectories: { id: string }[] }[] };
      group: { id: string; position: number; trajectories: { id: string }[] };
      trajectory: { id: string; steps: { state: string }[] };
      missing: null;
    };
  }>(
    `query($id: ID!, $g: String!, $t: String!) { run(id: $id) {
       groups(iteration: 1, first: 100) { nodes { id trajectories { ${TRAJECTORY} } } }
       group(iteration: 1, id: $g) { id position trajectories { ${TRAJECTORY} } }
       trajectory(iteration: 1, id: $t) { ${TRAJECTORY} }
       missing: trajectory(iteration: 0, id: "no such trajectory") { id } } }`,
    { id: parentId, g: group.id, t: trajectory.id },
  );
  const paged = data.run.groups.nodes.find((g) => g.id === group.id)!;
  expect(data.run.group).toEqual({ ...paged, position: 1 });
  expect(data.run.trajectory).toEqual(paged.trajectories.find((t) => t.id === trajectory.id));
  expect(data.run.trajectory.steps.map((s) => s.state)).toEqual(
    trajectory.steps.map((s) => s.state),
  );
  expect(data.run.missing).toBeNull();
});

test('jobs of a run, newest first, on the query and on the run; none for a run the key cannot see', async () => {
  const start = (name: string) =>
    read<{ recompute: { id: string } }>(
      'mutation($id: ID!, $m: String!) { recompute(runId: $id, method: { name: $m }) { id } }',
      { id: parentId, m: name },
    );
  const a = (await start('gigpo')).recompute.id;
  const b = (await start('rloo')).recompute.id;
  const q = `query($id: ID!) { jobs(runId: $id) { id runId status total }
    run(id: $id) { jobs { id } } }`;
  const data = await read<{
    jobs: { id: string; runId: string; status: string; total: number }[];
    run: { jobs: { id: string }[] };
  }>(q, { id: parentId });
  expect(data.jobs.map((j) => j.id)).toEqual([b, a]);
  expect(data.run.jobs.map((j) => j.id)).toEqual([b, a]);
  // Every complete iteration: 0 (iteration 1 is the running run's last, still open).
  expect(data.jobs.map((j) => [j.runId, j.total])).toEqual([
    [parentId, 1],
    [parentId, 1],
  ]);
  expect(['QUEUED', 'RUNNING', 'COMPLETED']).toContain(data.jobs[0]!.status);

  const elsewhere = await gql<{ jobs: unknown[] }>(server, q, { id: otherId }, readKey);
  expect(elsewhere.errors).toBeUndefined();
  expect(elsewhere.data).toEqual({ jobs: [], run: null });
});

interface Binned {
  compare: {
    stepCount: number;
    methods: { method: string; histogram: { counts: number[]; edges: number[] } }[];
    pairs: {
      a: string;
      b: string;
      density: { counts: number[]; total: number; xEdges: number[]; yEdges: number[] };
    }[];
    rows: {
      totalCount: number;
      nodes: { advantages: number[] }[];
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
    };
  };
}
const COMPARE = `query($id: ID!, $after: String) {
  compare(runId: $id, iterations: [0, 1], methods: [{ name: "grpo" }, { name: "gigpo" }, { name: "rloo" }]) {
    stepCount
    methods { method histogram(bins: 7) { counts edges } }
    pairs { a b density(bins: 5) { counts total xEdges yEdges } }
    rows(first: 50, after: $after) { totalCount nodes { advantages } pageInfo { hasNextPage endCursor } } } }`;

/** Which of `bins` equal-width bins over [lo, hi] a value falls in (the last one closed). */
const binOf = (x: number, edges: number[]) => {
  const bins = edges.length - 1;
  const [lo, hi] = [edges[0]!, edges[bins]!];
  return hi === lo ? 0 : Math.min(bins - 1, Math.floor(((x - lo) / (hi - lo)) * bins));
};

test('histograms and pairwise densities are binned on the server and count every step', async () => {
  const rows: number[][] = [];
  let after: string | null = null;
  let report: Binned['compare'] | undefined;
  for (;;) {
    const data: Binned = await read<Binned>(COMPARE, { id: parentId, after });
    report = data.compare;
    rows.push(...report.rows.nodes.map((r) => r.advantages));
    if (!report.rows.pageInfo.hasNextPage) break;
    after = report.rows.pageInfo.endCursor;
  }
  const stepCount = first.groups
    .concat(second.groups)
    .flatMap((g) => g.trajectories.flatMap((t) => t.steps)).length;
  expect(report!.stepCount).toBe(stepCount);
  expect(report!.rows.totalCount).toBe(stepCount);
  expect(rows).toHaveLength(stepCount);

  report!.methods.forEach((m, k) => {
    const values = rows.map((r) => r[k]!);
    expect(m.histogram.edges).toHaveLength(8);
    expect(m.histogram.edges[0]).toBeCloseTo(Math.min(...values), 5);
    expect(m.histogram.edges[7]).toBeCloseTo(Math.max(...values), 5);
    const expected = new Array<number>(7).fill(0);
    for (const x of values) expected[binOf(x, m.histogram.edges)]!++;
    expect(m.histogram.counts).toEqual(expected);
  });
  expect(report!.pairs.map((p) => `${p.a}/${p.b}`)).toEqual([
    'grpo/gigpo',
    'grpo/rloo',
    'gigpo/rloo',
  ]);
  const gigpoRloo = report!.pairs[2]!.density;
  expect(gigpoRloo.total).toBe(stepCount);
  expect(gigpoRloo.counts).toHaveLength(25);
  const expected = new Array<number>(25).fill(0);
  for (const r of rows)
    expected[binOf(r[2]!, gigpoRloo.yEdges) * 5 + binOf(r[1]!, gigpoRloo.xEdges)]!++;
  expect(gigpoRloo.counts).toEqual(expected);

  const tooMany = await gql(
    server,
    'query($id: ID!) { compare(runId: $id, methods: [{ name: "grpo" }]) { methods { histogram(bins: 100000) { counts } } } }',
    { id: parentId },
  );
  expect(tooMany.errors?.[0]?.message).toMatch(/bins/);
});

/** What the library computes for the run's two iterations, in canonical order. */
function library(method: string, params: Record<string, unknown> = {}): number[] {
  return [first, second].flatMap((b: RolloutBatch) =>
    Array.from(estimate(columnarBatchFromJson(b), method, params).advantages, Math.fround),
  );
}
const exportUrl = (runId: string, query: Record<string, string>) =>
  `${server.url}/v1/runs/${runId}/export?${new URLSearchParams(query)}`;

/**
 * A run of about 30 MB of CSV (a long state on every row): more than the sockets buffer, so the
 * server is still on an early iteration when a client has read the first bytes and pauses.
 */
const ITERATIONS = 24;
async function largeRun(name: string): Promise<string> {
  const { id } = await admin.createRun({ name, project: 'explorer', env: 'e', method: 'gaca' });
  const state = 'o'.repeat(4000);
  for (let i = 0; i < ITERATIONS; i++) {
    const trajectories = Array.from({ length: 8 }, (_, t) => ({
      id: `t${t}`,
      outcome: t % 2 ? ('success' as const) : ('failure' as const),
      steps: Array.from({ length: 40 }, (_, k) => ({
        state,
        action: `a${k % 3}`,
        reward: k === 39 ? 1 : 0,
        nll: 0.5,
      })),
    }));
    await admin.appendEvents(id, rolloutEvents(i, { groups: [{ id: 'g', trajectories }] }));
  }
  return id;
}

test('an export whose client goes away mid-file ends, and frees its place for the next', async () => {
  const id = await largeRun('export given up');
  const query = { format: 'csv', methods: '[{"name":"gaca"}]' };
  const given = new AbortController();
  const res = await api(exportUrl(id, query), { signal: given.signal });
  expect(res.status).toBe(200);
  await res.body!.getReader().read();
  given.abort();
  // This server runs one export at a time: the next is let in once the first has ended.
  let next = await api(exportUrl(id, query));
  for (let i = 0; i < 40 && next.status === 503; i++) {
    await next.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 250));
    next = await api(exportUrl(id, query));
  }
  expect(next.status).toBe(200);
  const text = Buffer.from(await next.arrayBuffer()).toString('utf8');
  expect(parse(text, { columns: true })).toHaveLength(ITERATIONS * 8 * 40);
});

test('an export is the run as it stood when asked: steps appended while it streams neither join nor cut it', async () => {
  const id = await largeRun('exported while written');
  const res = await api(exportUrl(id, { format: 'csv', methods: '[{"name":"gaca"}]' }));
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const chunks: Uint8Array[] = [(await reader.read()).value!];
  // While it streams: the last iteration gets a group whose steps have no NLL, which gaca needs.
  // Read at that point, the iteration would fail gaca and cut the file short.
  await admin.appendEvents(
    id,
    rolloutEvents(ITERATIONS - 1, {
      groups: [
        {
          id: 'late',
          trajectories: [{ id: 'x', steps: [{ state: 's', action: 'a', reward: 1 }] }],
        },
      ],
    }),
  );
  // Meanwhile another export is refused, not queued: this server runs one at a time.
  const second = await api(exportUrl(id, { format: 'csv' }));
  expect(second.status).toBe(503);
  expect(second.headers.get('retry-after')).toBe('5');
  expect(await second.json()).toMatchObject({
    error: 'SERVER_BUSY',
    message: expect.stringContaining('CREDITLAB_EXPORT_CONCURRENCY'),
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  const rows = parse(Buffer.concat(chunks).toString('utf8'), { columns: true }) as Record<
    string,
    string
  >[];
  expect(rows).toHaveLength(ITERATIONS * 8 * 40);
  expect(rows.some((r) => r.group_id === 'late')).toBe(false);
  expect(rows.every((r) => Number.isFinite(Number(r['adv:gaca'])))).toBe(true);
  // The next export has it: the late steps lack NLL, so gaca is refused before the first byte.
  const after = await api(exportUrl(id, { format: 'csv', methods: '[{"name":"gaca"}]' }));
  expect(after.status).toBe(400);
  expect(((await after.json()) as { message: string }).message).toMatch(/group "late"/);
});

test('export as CSV: every step with its fields and each method’s advantages, equal to the library', async () => {
  const methods = [{ name: 'gigpo' }, { name: 'gigpo', params: { gamma: 0.5 } }, { name: 'grpo' }];
  const stream = await admin.exportRun(parentId, { methods });
  const text = Buffer.from(await new Response(stream).arrayBuffer()).toString('utf8');
  const rows = parse(text, { columns: true }) as Record<string, string>[];
  const steps = [first, second].flatMap((b, i) =>
    b.groups.flatMap((g) =>
      g.trajectories.flatMap((t) => t.steps.map((s) => ({ i, g: g.id, t: t.id, s }))),
    ),
  );
  expect(rows).toHaveLength(steps.length);
  expect(Object.keys(rows[0]!)).toEqual(
    expect.arrayContaining([
      'run_id',
      'iteration',
      'group_id',
      'trajectory_id',
      'step_index',
      'state',
      'action',
      'reward',
      'outcome',
      'adv:gigpo#0',
      'adv:gigpo#1',
      'adv:grpo',
    ]),
  );
  expect(Object.keys(rows[0]!)).not.toContain('embedding');
  rows.forEach((row, n) => {
    const { i, g, t, s } = steps[n]!;
    expect([row.iteration, row.group_id, row.trajectory_id, row.state, row.action]).toEqual([
      String(i),
      g,
      t,
      s.state,
      s.action,
    ]);
    expect(Number(row.reward)).toBe(s.reward);
  });
  expect(rows.map((r) => Number(r['adv:gigpo#0']))).toEqual(library('gigpo'));
  expect(rows.map((r) => Number(r['adv:gigpo#1']))).toEqual(library('gigpo', { gamma: 0.5 }));
  expect(rows.map((r) => Number(r['adv:grpo']))).toEqual(library('grpo'));
});

test('export as Parquet holds the same values as the CSV; embeddings only when asked', async () => {
  const query = { methods: JSON.stringify([{ name: 'rloo' }]), iterations: '1' };
  // A column named twice is one column.
  const text = await (
    await api(exportUrl(parentId, { ...query, format: 'csv', include: 'embedding,embedding' }))
  ).text();
  expect(
    text
      .split('\n')[0]!
      .split(',')
      .filter((c) => c === 'embedding'),
  ).toHaveLength(1);
  const csv = parse(text, { columns: true }) as Record<string, string>[];
  const res = await api(exportUrl(parentId, { ...query, format: 'parquet', include: 'embedding' }));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/vnd.apache.parquet');
  const file = await res.arrayBuffer();
  const rows = (await parquetReadObjects({ file })) as Record<string, unknown>[];
  expect(rows).toHaveLength(csv.length);
  expect(rows.map((r) => r.state)).toEqual(csv.map((r) => r.state));
  expect(rows.map((r) => r.iteration)).toEqual(csv.map(() => 1));
  expect(rows.map((r) => r['adv:rloo'])).toEqual(csv.map((r) => Number(r['adv:rloo'])));
  expect(rows.map((r) => r['adv:rloo'])).toEqual(library('rloo').slice(-csv.length));
  const withEmbedding = second.groups
    .flatMap((g) => g.trajectories.flatMap((t) => t.steps))
    .filter((s) => s.embedding).length;
  expect(csv.filter((r) => r.embedding !== '')).toHaveLength(withEmbedding);
});

test('a read key exports, even at parameters it may not store, and the export records nothing', async () => {
  const tables = async () => ({
    ...(await rowCounts(server.databaseUrl)),
    sets: (
      await read<{ run: { advantageSets: unknown[] } }>(
        'query($id: ID!) { run(id: $id) { advantageSets { id } } }',
        { id: parentId },
      )
    ).run.advantageSets.length,
  });
  const before = await tables();
  const res = await api(
    exportUrl(parentId, {
      methods: JSON.stringify([{ name: 'gaca', params: { debiased: true } }]),
    }),
    {},
    readKey,
  );
  expect(res.status).toBe(200);
  const rows = parse(await res.text(), { columns: true }) as Record<string, string>[];
  expect(rows.map((r) => Number(r['adv:gaca']))).toEqual(library('gaca', { debiased: true }));
  expect(await tables()).toEqual(before);
});

test('a method needing a field that an exported step lacks is a 400 naming the step, before any byte', async () => {
  // Every step with NLL and value; then, in iteration 1, one trajectory missing some of them.
  const complete = (b: RolloutBatch): RolloutBatch => ({
    ...b,
    groups: b.groups.map((g) => ({
      ...g,
      trajectories: g.trajectories.map((t) => ({
        ...t,
        steps: t.steps.map((step, k) => ({ ...step, nll: 0.5 + k, value: 0.1 * k })),
      })),
    })),
  });
  const lacking = complete(first);
  const group = lacking.groups[1]!;
  const traj = group.trajectories[0]!;
  expect(traj.steps.length).toBeGreaterThanOrEqual(3);
  delete traj.steps[1]!.value;
  traj.steps[1]!.nll = undefined; // …but its token log-probs give it one, as the reader derives it
  traj.steps[1]!.tokenLogprobs = [-0.5, -1.5];
  delete traj.steps[2]!.nll;
  // A trajectory of the first group with no embedding at all (its slice's array is NULL).
  const bare = lacking.groups[0]!.trajectories[1]!;
  for (const step of bare.steps) delete step.embedding;
  const noEmbedding = `iteration 1, group "${lacking.groups[0]!.id}", trajectory "${bare.id}", step 0`;
  const runId = (
    await admin.createRun({ name: 'lacking', project: 'explorer', env: 'e', method: 'grpo' })
  ).id;
  // Sent last but first in canonical order: a step without value continuing the first trajectory.
  const earlier = lacking.groups[0]!.trajectories[0]!;
  const continued = { ...earlier.steps[0]!, value: undefined };
  await admin.appendEvents(runId, [
    ...rolloutEvents(0, complete(first)),
    ...rolloutEvents(1, lacking),
    {
      id: newEventId(),
      type: 'steps.appended',
      data: {
        iteration: 1,
        groupId: lacking.groups[0]!.id,
        trajectoryId: earlier.id,
        firstStepIndex: earlier.steps.length,
        steps: [continued],
      },
    },
  ]);
  const where = `iteration 1, group "${group.id}", trajectory "${traj.id}"`;
  const continuedAt = `iteration 1, group "${lacking.groups[0]!.id}", trajectory "${earlier.id}", step ${earlier.steps.length}`;
  for (const [method, needs, step] of [
    ['ppo-gae', '"value"', continuedAt],
    ['gaca', '"nll" (or "tokenLogprobs")', `${where}, step 2`],
    ['bipace', '"embedding"', noEmbedding],
  ] as const) {
    const methods = JSON.stringify([{ name: 'grpo' }, { name: method }]);
    const res = await api(exportUrl(runId, { methods }));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toMatchObject({
      error: 'INVALID_INPUT',
      message: `methods[1]: method "${method}" needs ${needs} on every step; ${step} has none`,
      estimatorError: 'MISSING_FIELD',
    });
    // The advantages endpoint refuses that step's iteration, naming the same step.
    const iteration = step.slice('iteration '.length, step.indexOf(','));
    const same = await api(
      `${server.url}/v1/runs/${runId}/iterations/${iteration}/advantages?method=${method}`,
    );
    expect(same.status).toBe(400);
    expect(((await same.json()) as { message: string }).message).toContain(
      step.slice(step.indexOf(', ') + 2),
    );
  }
  // Iteration 0 has NLL and value on every step: its export goes through.
  const methods = JSON.stringify([{ name: 'gaca' }, { name: 'ppo-gae' }]);
  const ok = await api(exportUrl(runId, { methods, iterations: '0' }));
  expect(ok.status).toBe(200);
  const rows = parse(await ok.text(), { columns: true }) as Record<string, string>[];
  expect(rows).toHaveLength(
    first.groups.flatMap((g) => g.trajectories.flatMap((t) => t.steps)).length,
  );
});

test('a bad export request is a 400 naming the parameter, before any byte of the file', async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ format: 'xlsx' }, /^format: /],
    [{ iterations: '0,x' }, /^iterations: whole numbers from 0 to 2147483647, got "x"$/],
    [{ iterations: '1e3' }, /^iterations: whole numbers from 0 to 2147483647, got "1e3"$/],
    [{ iterations: '0,2147483648' }, /got "2147483648"$/],
    [{ iterations: '7' }, /^iterations: run .* has no rollouts in iteration 7$/],
    [{ methods: '[{"name":' }, /^methods: must be JSON/],
    [{ methods: '[{"name":"no-such-method"}]' }, /no-such-method/],
    [{ methods: '[{"name":"gigpo","params":{"gamma":7}}]' }, /gamma/],
    [{ include: 'weights' }, /^include: unknown column weights; one of embedding, tokenLogprobs$/],
    // Names every JavaScript object has are not columns either.
    [{ include: '__proto__' }, /^include: unknown column __proto__; one of /],
    [
      { methods: '[{"name":"gigpo","params":{"__proto__":{"gamma":"x"}}}]' },
      /^methods: \[0\]\.params\.__proto__: key must not be "__proto__"/,
    ],
    [{ include: 'constructor' }, /^include: unknown column constructor; one of /],
    [{ include: 'toString', format: 'parquet' }, /^include: unknown column toString; one of /],
    // A misspelt parameter would have exported every iteration, or a method at its defaults.
    [
      { iteration: '0' },
      /^iteration: unknown query parameter; the query parameters here are format, iterations, methods, include$/,
    ],
    [
      { methods: '[{"name":"gigpo","param":{"gamma":0.5}}]' },
      /^methods\[0\]\.param: unknown field; the fields here are name, params$/,
    ],
  ];
  for (const [query, message] of cases) {
    const res = await api(exportUrl(parentId, query));
    expect([query, res.status]).toEqual([query, 400]);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('INVALID_INPUT');
    expect(body.message).toMatch(message);
  }
  const hidden = await api(exportUrl(otherId, {}), {}, readKey);
  expect(hidden.status).toBe(404);
  const anonymous = await fetch(exportUrl(parentId, {}));
  expect(anonymous.status).toBe(401);
});
