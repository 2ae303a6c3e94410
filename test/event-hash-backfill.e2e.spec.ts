import { CreditlabClient, newEventId, rolloutEvents } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import pg from 'pg';
import { fixtureBatches } from './support/fixture-batches';
import { ADMIN_KEY, spawnServer } from './support/test-server';
import { createTestDatabase } from './support/test-database';

/**
 * Events stored before body hashes existed get them when the server next starts: put back
 * together from the stored rows, they hash exactly as they did on arrival, so a retry of an old
 * request is still a duplicate and a reused id still a conflict.
 */
test('the backfill recomputes every event’s hash exactly as ingest computed it', async () => {
  const databaseUrl = await createTestDatabase();
  const first = await spawnServer({ DATABASE_URL: databaseUrl });
  const client = new CreditlabClient({ url: first.url, apiKey: ADMIN_KEY });
  const { id: runId } = await client.createRun({ name: 'old events', env: 'e', method: 'gigpo' });
  const sent: ClientEvent[] = [];
  // Steps as objects: events stored before hashes existed predate the columnar form.
  fixtureBatches().forEach(([, batch], i) =>
    sent.push(...rolloutEvents(i, batch, 7, { columnar: false })),
  );
  const step = (reward: number) => ({
    state: 'a room',
    action: 'look',
    reward,
    nll: 0.25,
    tokenLogprobs: [-0.1, -0.2],
    embedding: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], // the fixtures' dimension
    value: 0.5,
    nextState: 'the same room',
    nextValue: 0.75,
    trueAdvantage: -0.125,
    notes: { seen: ['x', 'y'], n: 1.5 },
  });
  sent.push(
    {
      id: newEventId(),
      type: 'steps.appended',
      data: { iteration: 50, groupId: 'g', trajectoryId: 't', firstStepIndex: 0, steps: [step(0)] },
    },
    {
      id: newEventId(),
      type: 'steps.appended',
      data: { iteration: 50, groupId: 'g', trajectoryId: 't', firstStepIndex: 1, steps: [step(1)] },
    },
    {
      id: newEventId(),
      type: 'trajectory.finished',
      data: { iteration: 50, groupId: 'g', trajectoryId: 't', outcome: 'success' },
    },
    { id: newEventId(), type: 'metrics.logged', data: { iteration: 50, metrics: { loss: 0.1 } } },
    {
      id: newEventId(),
      type: 'evaluation.logged',
      data: { iteration: 50, successRate: 0.5, tasks: [{ task: 'a', success: true, steps: 3 }] },
    },
  );
  await client.appendEvents(runId, sent);
  await first.stop();

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const hashes = async () =>
      (
        await db.query<{ seq: string; body_hash: Buffer | null }>(
          'SELECT seq, body_hash FROM events WHERE run_id = $1 ORDER BY seq',
          [runId],
        )
      ).rows.map((r) => `${r.seq}:${r.body_hash?.toString('hex') ?? 'none'}`);
    const before = await hashes();
    expect(before.length).toBe(sent.length + 1);
    // As a database from before the change: no hashes (a migration's privilege, not an API's).
    await db.query('ALTER TABLE events DISABLE TRIGGER events_append_only');
    await db.query('UPDATE events SET body_hash = NULL');
    await db.query('ALTER TABLE events ENABLE TRIGGER events_append_only');
    expect((await hashes()).every((h) => h.endsWith(':none'))).toBe(true);

    const second = await spawnServer({ DATABASE_URL: databaseUrl });
    try {
      expect(second.output()).toContain(`computed the body hash of ${sent.length + 1} events`);
      expect(await hashes()).toEqual(before);
      // Events stay append-only once hashed.
      await expect(db.query('UPDATE events SET body_hash = NULL')).rejects.toThrow(
        /append-only: UPDATE refused/,
      );
      const again = new CreditlabClient({ url: second.url, apiKey: ADMIN_KEY });
      expect(await again.appendEvents(runId, sent)).toMatchObject({
        accepted: 0,
        duplicates: sent.length,
      });
      const changed = { ...sent[3]!, data: { ...sent[3]!.data, iteration: 99 } } as ClientEvent;
      await expect(again.appendEvents(runId, [changed])).rejects.toThrow(/409 CONFLICT/);
    } finally {
      await second.stop();
    }
  } finally {
    await db.end();
  }
});
