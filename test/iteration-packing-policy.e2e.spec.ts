import pg from 'pg';
import { syntheticRun } from './support/synthetic-run';
import { gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * When complete iterations are packed for recompute (CREDITLAB_PACK_ITERATIONS): by default as
 * they complete, in the background of ingest; with `on-read` only once a recompute job has read
 * them from the steps table, so that ingest pays nothing for them.
 */
type Server = ServerProcess & { databaseUrl: string };

const packedIterations = async (server: Server, runId: string): Promise<number[]> => {
  const pool = new pg.Pool({ connectionString: server.databaseUrl, max: 1 });
  try {
    const { rows } = await pool.query<{ iteration: number }>(
      'SELECT iteration FROM iteration_columns WHERE run_id = $1 ORDER BY iteration',
      [runId],
    );
    return rows.map((r) => r.iteration);
  } finally {
    await pool.end();
  }
};

/** Polls until the run's packed iterations are `expected`, or `ms` pass; returns the last answer. */
async function packedWithin(server: Server, runId: string, expected: number[], ms: number) {
  const until = Date.now() + ms;
  let packed = await packedIterations(server, runId);
  while (JSON.stringify(packed) !== JSON.stringify(expected) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    packed = await packedIterations(server, runId);
  }
  return packed;
}

async function recomputeGrpo(server: Server, runId: string): Promise<void> {
  const asked = await gql<{ recompute: { id: string } }>(
    server,
    'mutation($r: ID!) { recompute(runId: $r, method: { name: "grpo" }) { id } }',
    { r: runId },
  );
  let status = '';
  while (status !== 'COMPLETED') {
    await new Promise((r) => setTimeout(r, 100));
    const res = await gql<{ job: { status: string } }>(
      server,
      'query($id: ID!) { job(id: $id) { status } }',
      {
        id: asked.data!.recompute.id,
      },
    );
    status = res.data!.job.status;
    expect(['QUEUED', 'RUNNING', 'COMPLETED']).toContain(status);
  }
}

describe('on-complete (the default)', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  test('the complete iterations are packed as they are ingested, with no job', async () => {
    const { id } = await syntheticRun(server.url, 4); // iteration 3 is still open
    expect(await packedWithin(server, id, [0, 1, 2], 60_000)).toEqual([0, 1, 2]);
  });
});

describe('on-read', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ CREDITLAB_PACK_ITERATIONS: 'on-read' });
  });
  afterAll(() => server.stop());

  test('ingest packs nothing; the first recompute packs what it read', async () => {
    const { id } = await syntheticRun(server.url, 4);
    // The default packs within a fraction of a second: seconds of nothing mean nothing was started.
    expect(await packedWithin(server, id, [0, 1, 2], 3_000)).toEqual([]);
    await recomputeGrpo(server, id);
    expect(await packedWithin(server, id, [0, 1, 2], 60_000)).toEqual([0, 1, 2]);
  });
});
