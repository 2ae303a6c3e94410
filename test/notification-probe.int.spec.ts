import pg from 'pg';
import { ListenerLost, notificationsArrive } from '../apps/server/src/database/notification-probe';
import { createTestDatabase } from './support/test-database';

/**
 * The check a server makes at start that notifications reach its listening connection, against
 * PostgreSQL itself. NOTIFY reaches only the listeners of its own database, so a listener on
 * another database stands for a transaction-mode pooler, whose listening server connection other
 * clients use meanwhile: nothing arrives, and no statement fails.
 */
const clients: pg.Client[] = [];
async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  clients.push(client);
  return client;
}
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
});

test('a notice sent on another connection of the same database arrives', async () => {
  const url = await createTestDatabase();
  const [sender, listener] = [await connect(url), await connect(url)];
  expect(await notificationsArrive(sender, listener, 30_000)).toBe(true);
  // The probe leaves the listener as it was: listening to nothing of its own.
  const channels = await listener.query<{ channel: string }>(
    'SELECT pg_listening_channels() AS channel',
  );
  expect(channels.rows).toEqual([]);
});

test('a notice that does not reach the listener is reported after the timeout, not waited for', async () => {
  const sender = await connect(await createTestDatabase());
  const listener = await connect(await createTestDatabase());
  const started = Date.now();
  expect(await notificationsArrive(sender, listener, 500)).toBe(false);
  expect(Date.now() - started).toBeGreaterThanOrEqual(490);
});

test('a listener that hears other channels is not fooled by them', async () => {
  const listenerUrl = await createTestDatabase();
  const sender = await connect(await createTestDatabase());
  const [listener, other] = [await connect(listenerUrl), await connect(listenerUrl)];
  await listener.query('LISTEN creditlab_run');
  let heard = 0;
  listener.on('notification', () => heard++);
  // Notices on the listener's own database, on its other channel and on the probe's channel with
  // another payload, while the probe's own goes to a database nobody listens on.
  const noise = setInterval(() => {
    other
      .query(`SELECT pg_notify('creditlab_run', 'x'), pg_notify('creditlab_listen_probe', 'y')`)
      .catch(() => undefined);
  }, 50);
  try {
    expect(await notificationsArrive(sender, listener, 500)).toBe(false);
  } finally {
    clearInterval(noise);
  }
  expect(heard).toBeGreaterThan(2); // the noise did arrive
});

test('a listener lost while the probe waits is told apart from a notice that did not come', async () => {
  const sender = await connect(await createTestDatabase());
  const listener = new pg.Client({ connectionString: await createTestDatabase() });
  listener.on('error', () => undefined);
  await listener.connect();
  const started = Date.now();
  const probe = notificationsArrive(sender, listener, 30_000);
  setTimeout(() => void listener.end(), 200);
  await expect(probe).rejects.toBeInstanceOf(ListenerLost);
  expect(Date.now() - started).toBeLessThan(25_000); // not the timeout
});
