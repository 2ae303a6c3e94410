import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import { fixtureBatches } from './support/fixture-batches';
import {
  portOpen,
  privateEmbeddedPostgres,
  removePrivateDirectories,
  trackPostmaster,
} from './support/private-postgres';
import { readIteration } from './support/read-back';
import { gql, spawnServer, ADMIN_KEY, api } from './support/test-server';

/**
 * The two-command default: no DATABASE_URL, so the server starts its own
 * embedded PostgreSQL in a persistent data directory. Everything acknowledged
 * survives a stop and a restart, and stopping the server stops the database.
 */
afterAll(removePrivateDirectories);

test('stop and restart the server with its embedded database: all acknowledged data is there', async () => {
  const { env, port: pgPort } = await privateEmbeddedPostgres();
  const [name, batch] = fixtureBatches()[4]!;

  const first = await spawnServer(env);
  expect(first.output()).toContain(
    `database: embedded PostgreSQL, data in ${env.CREDITLAB_PG_DIR}`,
  );
  await trackPostmaster(env.CREDITLAB_PG_DIR);
  const client = new CreditlabClient({ url: first.url, apiKey: ADMIN_KEY });
  const { id } = await client.createRun({
    name,
    env: 'fixtures',
    method: 'gigpo',
    tags: ['durable'],
  });
  const ack = await client.appendEvents(id, rolloutEvents(0, batch, 25));
  const before = await readIteration(first, id, 0);
  const advantages = (url: string) =>
    api(`${url}/v1/runs/${id}/iterations/0/advantages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/octet-stream' },
      body: '{"method": "gaca", "params": {"debiased": true}}',
    });
  const computed = await advantages(first.url);
  const computedBytes = Buffer.from(await computed.arrayBuffer());
  expect(computed.headers.get('x-creditlab-reused')).toBe('false');
  expect(await first.stop()).toBe(0);
  expect(await portOpen(pgPort)).toBe(false); // the embedded PostgreSQL stopped with the server

  const second = await spawnServer(env);
  try {
    await trackPostmaster(env.CREDITLAB_PG_DIR);
    const res = await gql<{
      run: { lastSeq: number; tags: string[]; iterations: { stepCount: number }[] };
    }>(second, 'query($id: ID!) { run(id: $id) { lastSeq tags iterations { stepCount } } }', {
      id,
    });
    expect(res.data?.run).toEqual({
      lastSeq: ack.lastSeq + 1, // + the advantages.used event the online path recorded
      tags: ['durable'],
      iterations: [
        {
          stepCount: batch.groups
            .flatMap((g) => g.trajectories)
            .reduce((n, t) => n + t.steps.length, 0),
        },
      ],
    });
    expect(await readIteration(second, id, 0)).toEqual(before);
    // The advantage set survived too: served from the store, same set, same bytes.
    const again = await advantages(second.url);
    expect(again.headers.get('x-creditlab-reused')).toBe('true');
    expect(again.headers.get('x-creditlab-advantage-set')).toBe(
      computed.headers.get('x-creditlab-advantage-set'),
    );
    expect(Buffer.from(await again.arrayBuffer())).toEqual(computedBytes);
  } finally {
    await second.stop();
  }
});
