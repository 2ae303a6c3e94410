import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/** The channel of the probe: its payload, a new token each time, is known to the prober alone. */
export const PROBE_CHANNEL = 'creditlab_listen_probe';

/** The listening connection ended while the probe waited: nothing can be told of the route. */
export class ListenerLost extends Error {}

/**
 * Whether a NOTIFY sent on `sender` reaches `listener`'s LISTEN within `timeoutMs`. Live updates
 * and every process's notices of another's writes travel that way, and a transaction-mode pooler
 * (PgBouncer's `pool_mode = transaction`, the poolers of several managed PostgreSQLs) takes LISTEN
 * without error but hands the listening server connection to other clients, so nothing arrives:
 * the server then says so rather than serving pages that never update. Rejects with ListenerLost
 * if the listener ends meanwhile.
 */
export async function notificationsArrive(
  sender: pg.ClientBase,
  listener: pg.ClientBase,
  timeoutMs: number,
): Promise<boolean> {
  const token = randomUUID();
  await listener.query(`LISTEN ${PROBE_CHANNEL}`);
  let settle: (outcome: boolean | Error) => void = () => undefined;
  const arrived = new Promise<boolean>((resolve, reject) => {
    const onNotice = (n: pg.Notification) => {
      if (n.channel === PROBE_CHANNEL && n.payload === token) settle(true);
    };
    const onEnd = () => settle(new ListenerLost('the listening connection ended'));
    // A notice PostgreSQL sent is read before the answer to a statement sent after the timer
    // fired, so an event loop held up past the timeout (a loaded start) is not taken for a loss.
    const timer = setTimeout(() => {
      listener.query('SELECT 1').then(
        () => settle(false),
        () => settle(false),
      );
    }, timeoutMs);
    settle = (outcome) => {
      settle = () => undefined;
      clearTimeout(timer);
      listener.off('notification', onNotice);
      listener.off('end', onEnd);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    listener.on('notification', onNotice);
    listener.once('end', onEnd);
  });
  try {
    await sender.query('SELECT pg_notify($1, $2)', [PROBE_CHANNEL, token]);
  } catch (e) {
    settle(false);
    throw e;
  }
  try {
    return await arrived;
  } finally {
    await listener.query(`UNLISTEN ${PROBE_CHANNEL}`).catch(() => undefined);
  }
}
