import { columnarBatchFromJson, estimate, getMethod } from '@creditlab/estimators';
import pg from 'pg';
import { gql, spawnServer, startTestServer, type ServerProcess, api } from './support/test-server';
import { syntheticRun } from './support/synthetic-run';

/** Recompute jobs with a real queue (pg-boss), real workers and a real database. */
let server: ServerProcess & { databaseUrl: string };
beforeAll(async () => {
  server = await startTestServer({
    CREDITLAB_RECOMPUTE_TURN_MS: '5',
    // Chunks of a few small iterations, so that a job of this file's runs has several.
    CREDITLAB_RECOMPUTE_CHUNK_STEPS: '256',
    CREDITLAB_JOB_MAINTENANCE_SECONDS: '1',
    CREDITLAB_JOB_EXPIRE_SECONDS: '3',
  });
});
afterAll(() => server.stop());

interface Job {
  id: string;
  status: string;
  done: number;
  total: number;
  error: string | null;
  advantageSetId: string;
}
const JOB = 'id status done total error advantageSetId';

async function recompute(
  url: string,
  runId: string,
  method: Record<string, unknown>,
  iterations?: number[],
): Promise<Job> {
  const res = await gql<{ recompute: Job }>(
    { url },
    `mutation($r: ID!, $m: MethodInput!, $i: [Int!]) { recompute(runId: $r, method: $m, iterations: $i) { ${JOB} } }`,
    { r: runId, m: method, i: iterations ?? null },
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data!.recompute;
}

async function waitFor(
  url: string,
  id: string,
  done: (j: Job) => boolean,
  timeoutMs = 60_000,
): Promise<Job> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const job = (
      await gql<{ job: Job }>({ url }, `query($id: ID!) { job(id: $id) { ${JOB} } }`, { id })
    ).data?.job;
    if (job && done(job)) return job;
    if (Date.now() > until) throw new Error(`job ${id} still ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const finished = (j: Job) => ['COMPLETED', 'FAILED', 'CANCELLED'].includes(j.status);

async function storedAdvantages(
  url: string,
  runId: string,
  iteration: number,
  method: Record<string, unknown>,
): Promise<number[]> {
  const res = await api(`${url}/v1/runs/${runId}/iterations/${iteration}/advantages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/octet-stream' },
    body: JSON.stringify(method),
  });
  expect(res.headers.get('x-creditlab-reused')).toBe('true'); // it was already stored by the job
  return Array.from(new Float32Array(await res.arrayBuffer()));
}

test('a job computes every complete iteration; the set equals the library; asking again reuses it', async () => {
  const { id, batches } = await syntheticRun(server.url, 5);
  const job = await recompute(server.url, id, { name: 'gated-bepo', params: { gamma: 0.9 } });
  expect(job.total).toBe(4); // iteration 4 is still open: the last one of a running run
  // The mutation answers with the job as stored after it woke the workers, so one may have taken it already.
  expect(['QUEUED', 'RUNNING', 'COMPLETED']).toContain(job.status);
  const done = await waitFor(server.url, job.id, finished);
  expect(done).toMatchObject({ status: 'COMPLETED', done: 4, total: 4, error: null });
  for (let i = 0; i < 4; i++) {
    const direct = estimate(columnarBatchFromJson(batches[i]), 'gated-bepo', { gamma: 0.9 });
    expect(
      await storedAdvantages(server.url, id, i, { method: 'gated-bepo', params: { gamma: 0.9 } }),
    ).toEqual(Array.from(direct.advantages, Math.fround));
  }
  const again = await recompute(server.url, id, {
    name: 'gated-bepo',
    params: { gamma: 0.9, lambda: 0.95 },
  });
  expect(again.advantageSetId).toBe(job.advantageSetId);
  expect(await waitFor(server.url, again.id, finished)).toMatchObject({
    status: 'COMPLETED',
    done: 4,
  });
  const sets = await gql<{ run: { advantageSets: { id: string; iterations: number[] }[] } }>(
    server,
    'query($id: ID!) { run(id: $id) { advantageSets { id iterations } } }',
    { id },
  );
  expect(sets.data!.run.advantageSets).toEqual([
    { id: job.advantageSetId, iterations: [0, 1, 2, 3] },
  ]);
});

/** A method's diagnostics as the API serves them: float32, null for NaN, booleans as booleans. */
function servedDiagnostics(method: string, diagnostics: Record<string, ArrayLike<number>>) {
  const kinds = new Map(getMethod(method).diagnostics.map((d) => [d.name, d.kind]));
  return Object.fromEntries(
    Object.entries(diagnostics).map(([name, xs]) => [
      name,
      Array.from(xs, (x) =>
        Number.isNaN(x) ? null : kinds.get(name) === 'boolean' ? x !== 0 : Math.fround(x),
      ),
    ]),
  );
}

/** Which iterations of a set are stored without diagnostics (a job's versions, not yet asked for). */
async function withoutDiagnostics(setId: string): Promise<number[]> {
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    const res = await db.query<{ iteration: number }>(
      'SELECT iteration FROM advantage_set_iterations WHERE set_id = $1 AND diagnostics IS NULL ORDER BY iteration',
      [setId],
    );
    return res.rows.map((r) => r.iteration);
  } finally {
    await db.end();
  }
}

test('a job stores no diagnostics; the first read that asks computes the library’s and keeps them', async () => {
  const { id, batches } = await syntheticRun(server.url, 4);
  const job = await recompute(server.url, id, { name: 'gigpo' });
  expect(await waitFor(server.url, job.id, finished)).toMatchObject({ status: 'COMPLETED' });
  expect(await withoutDiagnostics(job.advantageSetId)).toEqual([0, 1, 2]);
  const direct = (i: number) => estimate(columnarBatchFromJson(batches[i]), 'gigpo');

  // Advantages alone are the job's version, over REST and GraphQL.
  expect(await storedAdvantages(server.url, id, 1, { method: 'gigpo' })).toEqual(
    Array.from(direct(1).advantages, Math.fround),
  );
  // Diagnostics over REST: computed now (not reused), equal to the library's, then stored.
  const res = await api(
    `${server.url}/v1/runs/${id}/iterations/0/advantages?method=gigpo&diagnostics=true`,
  );
  expect(res.headers.get('x-creditlab-reused')).toBe('false');
  const doc = (await res.json()) as {
    groups: { trajectories: { advantages: number[]; diagnostics: Record<string, unknown[]> }[] }[];
  };
  const trajectories = doc.groups.flatMap((g) => g.trajectories);
  const served = Object.fromEntries(
    Object.keys(trajectories[0]!.diagnostics).map((name) => [
      name,
      trajectories.flatMap((t) => t.diagnostics[name]!),
    ]),
  );
  expect(served).toEqual(servedDiagnostics('gigpo', direct(0).diagnostics));
  expect(trajectories.flatMap((t) => t.advantages)).toEqual(
    Array.from(direct(0).advantages, Math.fround),
  );
  expect(await withoutDiagnostics(job.advantageSetId)).toEqual([1, 2]);
  const again = await api(
    `${server.url}/v1/runs/${id}/iterations/0/advantages?method=gigpo&diagnostics=true`,
  );
  expect(again.headers.get('x-creditlab-reused')).toBe('true');

  // Diagnostics over GraphQL, step by step, beside the advantage of the same step.
  type Steps = { steps: { advantage: number; diagnostics: Record<string, unknown> }[] }[];
  const steps = await gql<{ run: { groups: { nodes: { trajectories: Steps }[] } } }>(
    server,
    `query($id: ID!) { run(id: $id) { groups(iteration: 2, first: 100) { nodes { trajectories {
       steps { advantage(method: { name: "gigpo" }) diagnostics(method: { name: "gigpo" }) } } } } } }`,
    { id },
  );
  expect(steps.errors).toBeUndefined();
  const flat = steps.data!.run.groups.nodes.flatMap((g) => g.trajectories.flatMap((t) => t.steps));
  const expected = servedDiagnostics('gigpo', direct(2).diagnostics);
  expect(flat.map((s) => s.advantage)).toEqual(Array.from(direct(2).advantages, Math.fround));
  for (const name of Object.keys(expected))
    expect(flat.map((s) => s.diagnostics[name])).toEqual(expected[name]);
  expect(await withoutDiagnostics(job.advantageSetId)).toEqual([1]);
});

test('a job that cannot succeed fails with the estimator’s message', async () => {
  const { id } = await syntheticRun(server.url, 2, {
    groups: 2,
    groupSize: 4,
    maxSteps: 5,
    withoutEmbeddings: true,
  });
  const job = await recompute(server.url, id, { name: 'bipace' }, [0, 1]);
  const failed = await waitFor(server.url, job.id, finished);
  expect(failed.status).toBe('FAILED');
  expect(failed.error).toMatch(
    new RegExp(
      `^bipace on run ${id} iteration 0: group "g0", trajectory "g0/t0", step 0 .*method "bipace" needs "embedding" on every step`,
    ),
  );
});

test('a cancelled job stops between chunks of iterations', async () => {
  // 48 iterations of up to 96 steps in chunks of at most 256 steps: a dozen chunks or more, so a
  // cancel right after queueing lands before the last one.
  const { id } = await syntheticRun(server.url, 48, {
    groups: 3,
    groupSize: 4,
    maxSteps: 8,
    statesPerGroup: 4,
    embeddingDim: 8,
  });
  const job = await recompute(server.url, id, { name: 'bipace' }, [...Array(48).keys()]);
  const cancelled = await gql<{ cancelJob: Job }>(
    server,
    `mutation($id: ID!) { cancelJob(id: $id) { ${JOB} } }`,
    { id: job.id },
  );
  expect(cancelled.data!.cancelJob.status).toBe('CANCELLED');
  await new Promise((r) => setTimeout(r, 1500));
  const after = await waitFor(server.url, job.id, finished);
  expect(after.status).toBe('CANCELLED');
  expect(after.done).toBeLessThan(48);
});

test('a job whose server dies mid-way is resumed by another server process, without duplicates', async () => {
  const { id, batches } = await syntheticRun(server.url, 16, {
    groups: 40,
    groupSize: 8,
    maxSteps: 50,
    statesPerGroup: 30,
    embeddingDim: 128,
  });
  // A second server on the same database: it takes jobs too. Kill it while it holds our job.
  const env = {
    DATABASE_URL: server.databaseUrl,
    CREDITLAB_RECOMPUTE_TURN_MS: '60000',
    // An iteration or two per chunk (~10k steps each), so the job is killed with work stored and work left.
    CREDITLAB_RECOMPUTE_CHUNK_STEPS: '20000',
    CREDITLAB_JOB_MAINTENANCE_SECONDS: '1',
    CREDITLAB_JOB_EXPIRE_SECONDS: '3',
  };
  await server.stop();
  const doomed = await spawnServer(env);
  const job = await recompute(doomed.url, id, { name: 'bipace' }, [...Array(16).keys()]);
  await waitFor(doomed.url, job.id, (j) => j.done >= 2);
  doomed.process.kill('SIGKILL');
  await doomed.stop();
  const survivor = await spawnServer(env);
  try {
    const done = await waitFor(survivor.url, job.id, finished, 90_000);
    expect(done).toMatchObject({ status: 'COMPLETED', done: 16 });
    for (const i of [0, 7, 15]) {
      const direct = estimate(columnarBatchFromJson(batches[i]), 'bipace', {});
      expect(await storedAdvantages(survivor.url, id, i, { method: 'bipace' })).toEqual(
        Array.from(direct.advantages, Math.fround),
      );
    }
  } finally {
    await survivor.stop();
    server = { ...(await spawnServer(env)), databaseUrl: server.databaseUrl };
  }
});

test('a worker takes the turns its own process queues at once, not at its next poll', async () => {
  // Polling once an hour: the job (a turn of 5 ms per chunk, so re-queued turn after turn) can only
  // finish because enqueueing wakes this process's workers.
  // Its own database: no other server's worker may take the job.
  const quiet = await startTestServer({
    CREDITLAB_JOB_POLL_SECONDS: '3600',
    CREDITLAB_RECOMPUTE_TURN_MS: '5',
    CREDITLAB_RECOMPUTE_CHUNK_STEPS: '64',
  });
  try {
    const { id } = await syntheticRun(quiet.url, 40, { groups: 2, groupSize: 4, maxSteps: 5 });
    const job = await recompute(quiet.url, id, { name: 'gigpo' });
    expect(await waitFor(quiet.url, job.id, finished, 120_000)).toMatchObject({
      status: 'COMPLETED',
      done: 39,
    });
  } finally {
    await quiet.stop();
  }
});
