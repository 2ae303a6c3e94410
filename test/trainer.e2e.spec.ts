import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { DEFAULT_CONFIG, type TrainerConfig } from '../apps/trainer/src/config';
import { decodeCheckpoint } from '../apps/trainer/src/policy/checkpoint';
import { fork } from '../apps/trainer/src/fork';
import { retrain } from '../apps/trainer/src/retrain';
import { train } from '../apps/trainer/src/trainer';
import { readIteration } from './support/read-back';
import { ADMIN_KEY, api, gql, startTestServer, type ServerProcess } from './support/test-server';

/** Three iterations of the real trainer against a real server: the run leaves the expected events, sets and checkpoints. */
let server: ServerProcess & { databaseUrl: string };
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

/** A short run's config: small enough for a test, every event type still produced. */
async function smallRun(overrides: Partial<TrainerConfig>): Promise<TrainerConfig> {
  return {
    ...DEFAULT_CONFIG,
    serverUrl: server.url,
    tasksPerIteration: 3,
    groupSize: 4,
    evalEvery: 10,
    evalTasks: 2,
    checkpointEvery: 0,
    ...overrides,
  };
}

test('a 3-iteration run streams rollouts, trains on the server’s advantages, logs, evaluates and checkpoints', async () => {
  const seen: number[] = [];
  const { runId, reports } = await train(
    await smallRun({
      method: 'gaca',
      iterations: 3,
      evalEvery: 2,
      evalTasks: 4,
      checkpointEvery: 2,
      groupSize: 6, // enough rollouts that some succeed: a group of failures has zero advantages everywhere
    }),
    { onIteration: (r) => seen.push(r.iteration) },
    ADMIN_KEY,
  );
  expect(seen).toEqual([0, 1, 2]);
  const res = await gql<{
    run: {
      status: string;
      config: { backend: string };
      iterations: { index: number; stepCount: number; metrics: Record<string, number> }[];
      advantageSets: { method: string; iterations: number[] }[];
      events: {
        nodes: { type: string; iteration: number | null; data: Record<string, unknown> }[];
      };
    };
  }>(
    server,
    `query($id: ID!) { run(id: $id) { status config iterations { index stepCount metrics } advantageSets { method iterations }
       events(first: 1000) { nodes { type iteration data } } } }`,
    { id: runId },
  );
  const run = res.data!.run;
  expect(run.status).toBe('COMPLETED');
  expect(['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']).toContain(run.config.backend);
  expect(run.advantageSets).toEqual([{ method: 'gaca', iterations: [0, 1, 2] }]);
  expect(run.iterations.map((i) => i.index)).toEqual([0, 1, 2]);
  run.iterations.forEach((it, i) => {
    expect(it.stepCount).toBe(reports[i]!.steps);
    expect(Object.keys(it.metrics).sort()).toEqual([
      'advantageRms',
      'approxKl',
      'clipFraction',
      'entropy',
      'loss',
      'meanReturn',
      'successRate',
      'valueLoss',
    ]);
  });
  const types = run.events.nodes.map((e) => e.type);
  expect(types[0]).toBe('RUN_CREATED');
  expect(types.at(-1)).toBe('RUN_FINISHED');
  expect(types.filter((t) => t === 'ADVANTAGES_USED')).toHaveLength(3);
  expect(types.filter((t) => t === 'METRICS_LOGGED')).toHaveLength(3);
  expect(
    run.events.nodes.filter((e) => e.type === 'EVALUATION_LOGGED').map((e) => e.iteration),
  ).toEqual([1, 2]);
  // checkpoint k = the weights after k iterations: uploaded after iterations 2 (every 2) and 3 (the last)
  const checkpoints = run.events.nodes.filter((e) => e.type === 'CHECKPOINT_SAVED');
  expect(checkpoints.map((e) => e.data.iteration)).toEqual([2, 3]);
  const download = await api(`${server.url}${checkpoints[1]!.data.uri as string}`);
  expect(download.headers.get('x-creditlab-sha256')).toBe(checkpoints[1]!.data.sha256);
  const saved = decodeCheckpoint(new Uint8Array(await download.arrayBuffer()));
  expect(saved.iteration).toBe(3);
  expect(saved.tensors.find((t) => t.name === 'policy/E')!.shape).toEqual([
    DEFAULT_CONFIG.policy.vocab,
    DEFAULT_CONFIG.policy.hidden,
  ]);
  expect(saved.tensors.some((t) => t.name.startsWith('optimizer/'))).toBe(true);

  // every step carries its exact advantage, and compare scores each estimator against it
  const steps: { truth: number; grpo: number; gigpo: number }[] = [];
  for (const iteration of [0, 1, 2]) {
    const page = await gql<{
      run: {
        groups: {
          nodes: {
            trajectories: {
              steps: { extra: { trueAdvantage: number }; grpo: number; gigpo: number }[];
            }[];
          }[];
        };
      };
    }>(
      server,
      `query($id: ID!, $it: Int!) { run(id: $id) { groups(iteration: $it, first: 100) { nodes { trajectories { steps {
         extra grpo: advantage(method: { name: "grpo" }) gigpo: advantage(method: { name: "gigpo" }) } } } } } }`,
      { id: runId, it: iteration },
    );
    for (const g of page.data!.run.groups.nodes)
      for (const t of g.trajectories)
        for (const st of t.steps)
          steps.push({ truth: st.extra.trueAdvantage, grpo: st.grpo, gigpo: st.gigpo });
  }
  expect(steps.every((st) => Number.isFinite(st.truth))).toBe(true);
  const scored = await gql<{
    compare: {
      againstReference: { method: string; steps: number; pearson: number; signAgreement: number }[];
    };
  }>(
    server,
    `query($id: ID!) { compare(runId: $id, methods: [{ name: "grpo" }, { name: "gigpo" }]) {
       againstReference { method steps pearson signAgreement } } }`,
    { id: runId },
  );
  const byMethod = scored.data!.compare.againstReference;
  for (const method of ['grpo', 'gigpo'] as const) {
    const row = byMethod.find((r) => r.method === method)!;
    expect(row.steps).toBe(steps.length);
    const x = steps.map((st) => st[method]);
    const y = steps.map((st) => st.truth);
    const local = pearsonOf(x, y);
    if (Number.isNaN(local))
      expect(row.pearson).toBeNull(); // a method constant over these steps
    else expect(row.pearson).toBeCloseTo(local, 5);
    // signs compared where both are nonzero (a zero carries no sign)
    const both = steps.filter((st) => st[method] !== 0 && st.truth !== 0);
    expect(row.signAgreement).toBeCloseTo(
      both.filter((st) => Math.sign(st[method]) === Math.sign(st.truth)).length / both.length,
      10,
    );
  }
  expect(byMethod.some((r) => r.pearson !== null)).toBe(true);
});

function pearsonOf(x: number[], y: number[]): number {
  const mx = x.reduce((a, b) => a + b, 0) / x.length;
  const my = y.reduce((a, b) => a + b, 0) / y.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  x.forEach((xi, i) => {
    sxy += (xi - mx) * ((y[i] as number) - my);
    sxx += (xi - mx) ** 2;
    syy += ((y[i] as number) - my) ** 2;
  });
  return sxy / Math.sqrt(sxx * syy);
}

test('a fork replays a run’s config and seed under another method: identical first rollouts, linked to its parent', async () => {
  const parent = await train(await smallRun({ method: 'grpo', iterations: 2 }), {}, ADMIN_KEY);
  const child = await fork(
    { url: server.url, apiKey: ADMIN_KEY },
    parent.runId,
    'gigpo',
    { gamma: 0.9 },
    {},
    { iterations: 1 },
  );
  const res = await gql<{
    run: {
      parentRunId: string;
      forkIteration: number;
      method: string;
      params: unknown;
      seed: number;
    };
  }>(server, 'query($id: ID!) { run(id: $id) { parentRunId forkIteration method params seed } }', {
    id: child.runId,
  });
  expect(res.data!.run).toEqual({
    parentRunId: parent.runId,
    forkIteration: 0,
    method: 'gigpo',
    params: { gamma: 0.9 },
    seed: DEFAULT_CONFIG.seed,
  });
  const strip = (groups: Awaited<ReturnType<typeof readIteration>>) =>
    groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map((t) => ({
        id: t.id,
        steps: t.steps.map((s) => [s.state, s.action, s.reward, s.nll]),
      })),
    }));
  expect(strip(await readIteration(server, child.runId, 0))).toEqual(
    strip(await readIteration(server, parent.runId, 0)),
  );
});

test('a fork from checkpoint k starts at iteration k with the parent’s weights: its iteration k rollouts are the parent’s (Sokoban)', async () => {
  const parent = await train(
    await smallRun({ env: 'sokoban-tiny', method: 'grpo', iterations: 3, checkpointEvery: 2 }),
    {},
    ADMIN_KEY,
  );
  const server_ = { url: server.url, apiKey: ADMIN_KEY };
  const child = await fork(server_, parent.runId, 'gigpo', {}, {}, {}, 2);
  expect(child.reports.map((r) => r.iteration)).toEqual([2]);
  const res = await gql<{
    run: { parentRunId: string; forkIteration: number; iterations: { index: number }[] };
  }>(
    server,
    'query($id: ID!) { run(id: $id) { parentRunId forkIteration iterations { index } } }',
    { id: child.runId },
  );
  expect(res.data!.run).toMatchObject({ parentRunId: parent.runId, forkIteration: 2 });
  const rollouts = (groups: Awaited<ReturnType<typeof readIteration>>) =>
    groups.map((g) =>
      g.trajectories.map((t) =>
        t.steps.map((s) => [s.state, s.action, s.nll, s.extra?.trueAdvantage]),
      ),
    );
  const mine = rollouts(await readIteration(server, child.runId, 2));
  expect(mine).toEqual(rollouts(await readIteration(server, parent.runId, 2)));
  expect(mine.flat(2).every((s) => typeof s[3] === 'number')).toBe(true); // exact advantages on tiny Sokoban
  // the checkpoint is what makes them equal: a fork from scratch under GiGPO reaches iteration 2 with
  // other weights (its first two updates used other advantages) and samples differently there
  const scratch = await fork(server_, parent.runId, 'gigpo', {}, {}, {}, 0);
  expect(rollouts(await readIteration(server, scratch.runId, 2))).not.toEqual(mine);
  await expect(fork(server_, parent.runId, 'gigpo', {}, {}, {}, 1)).rejects.toThrow(
    /has no checkpoint 1; it has 2, 3/,
  );
});

test('retrain re-runs a run’s updates on its stored rollouts under another method, in a linked run', async () => {
  const parent = await train(
    await smallRun({ method: 'grpo', iterations: 2, tasksPerIteration: 2 }),
    {},
    ADMIN_KEY,
  );
  const child = await retrain({ url: server.url, apiKey: ADMIN_KEY }, parent.runId, 'gated-bepo');
  expect(child.reports.map((r) => r.steps)).toEqual(parent.reports.map((r) => r.steps));
  const res = await gql<{
    run: {
      parentRunId: string;
      status: string;
      advantageSets: { method: string; iterations: number[] }[];
    };
  }>(
    server,
    'query($id: ID!) { run(id: $id) { parentRunId status advantageSets { method iterations } } }',
    { id: child.runId },
  );
  expect(res.data!.run).toEqual({
    parentRunId: parent.runId,
    status: 'COMPLETED',
    advantageSets: [{ method: 'gated-bepo', iterations: [0, 1] }],
  });
  const strip = (groups: Awaited<ReturnType<typeof readIteration>>) =>
    groups.map((g) => g.trajectories.map((t) => t.steps.map((s) => [s.state, s.action, s.reward])));
  expect(strip(await readIteration(server, child.runId, 1))).toEqual(
    strip(await readIteration(server, parent.runId, 1)),
  );
});

test('retrain replays each group in the task its steps logged, whatever the group is called; a run that logged no task seeds, in the tasks its config drew', async () => {
  const parent = await train(
    await smallRun({ method: 'grpo', iterations: 1, tasksPerIteration: 2 }),
    {},
    ADMIN_KEY,
  );
  const stored = await readIteration(server, parent.runId, 0);
  for (const g of stored) {
    const seeds = new Set(g.trajectories.flatMap((t) => t.steps.map((s) => s.extra?.taskSeed)));
    expect(seeds.size).toBe(1);
    expect(g.id).toBe(`task-${[...seeds][0] as number}`);
  }
  const { config } = (
    await gql<{ run: { config: Record<string, unknown> & { env: string } } }>(
      server,
      'query($id: ID!) { run(id: $id) { config } }',
      {
        id: parent.runId,
      },
    )
  ).data!.run;
  // copies of the parent's iteration 0 under other group ids, with and without the logged extras
  const copy = async (withExtras: boolean) => {
    const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
    const { id } = await client.createRun({
      name: 'copy',
      env: config.env,
      method: 'grpo',
      config,
    });
    const groups = stored.map((g, i) => ({
      id: `renamed-${i}`,
      trajectories: g.trajectories.map((t) => ({
        id: t.id,
        outcome: t.outcome as 'success' | 'truncated',
        steps: t.steps.map((s) => ({
          ...(withExtras ? s.extra : {}),
          state: s.state,
          action: s.action,
          reward: s.reward,
          nll: s.nll!,
        })),
      })),
    }));
    await client.appendEvents(id, rolloutEvents(0, { groups }));
    return id;
  };
  for (const withExtras of [true, false]) {
    const source = await copy(withExtras);
    const child = await retrain({ url: server.url, apiKey: ADMIN_KEY }, source, 'gigpo');
    expect(child.status).toBe('completed');
    expect(child.reports.map((r) => r.steps)).toEqual(parent.reports.map((r) => r.steps));
    expect(child.reports[0]!.successRate).toBe(parent.reports[0]!.successRate);
  }
});
