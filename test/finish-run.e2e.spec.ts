import { gql, startTestServer, type ServerProcess } from './support/test-server';

/**
 * finishRun, called by several hands at once (an operator and a watchdog finishing a dead
 * trainer's run): the run is finished once; a repeat with the same status is answered like the
 * first, another status is a CONFLICT — whichever of them reaches the run first.
 */
let server: ServerProcess & { databaseUrl: string };
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const CALLS = 8;

async function newRun(): Promise<string> {
  const res = await gql<{ createRun: { id: string } }>(
    server,
    'mutation { createRun(input: { name: "finish", env: "e", method: "grpo" }) { id } }',
  );
  return res.data!.createRun.id;
}

const finish = (runId: string, status: string) =>
  gql<{ finishRun: { status: string } }>(
    server,
    `mutation { finishRun(runId: "${runId}", status: ${status}) { status } }`,
  );

async function finishedEvents(runId: string): Promise<number> {
  const res = await gql<{ run: { events: { nodes: { type: string }[] } } }>(
    server,
    `{ run(id: "${runId}") { events(first: 100) { nodes { type } } } }`,
  );
  return res.data!.run.events.nodes.filter((e) => e.type === 'RUN_FINISHED').length;
}

test('concurrent calls with the same status all succeed, and the run is finished once', async () => {
  const runId = await newRun();
  const answers = await Promise.all(Array.from({ length: CALLS }, () => finish(runId, 'FAILED')));
  for (const answer of answers)
    expect(answer).toEqual({ data: { finishRun: { status: 'FAILED' } } });
  expect(await finishedEvents(runId)).toBe(1);
});

test('concurrent calls with different statuses: one wins, the others get CONFLICT naming it', async () => {
  const runId = await newRun();
  const statuses = Array.from({ length: CALLS }, (_, i) => (i % 2 ? 'COMPLETED' : 'ABORTED'));
  const answers = await Promise.all(statuses.map((s) => finish(runId, s)));
  const winner = answers.find((a) => a.data?.finishRun)?.data?.finishRun.status;
  expect(winner).toBeDefined();
  answers.forEach((answer, i) => {
    if (statuses[i] === winner) {
      expect(answer).toEqual({ data: { finishRun: { status: winner } } });
    } else {
      expect(answer.errors?.[0]).toMatchObject({
        extensions: { code: 'CONFLICT' },
        message: expect.stringContaining(`is already ${winner!.toLowerCase()}`),
      });
    }
  });
  expect(await finishedEvents(runId)).toBe(1);
});
