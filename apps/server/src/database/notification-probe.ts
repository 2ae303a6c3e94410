import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/** The channel of the probe: its payload, a new token each time, is known to the prober alone. */
export const PROBE_CHANNEL = 'creditlab_listen_probe';

/**
 * Whether a NOTIFY sent on `sender` reaches `listener`'s LISTEN within `timeoutMs`. Live updates
 * and every process's notices of another's writes travel that way, and a transaction-mode pooler
 * (PgBouncer's `pool_mode = transaction`, the poolers of several managed PostgreSQLs) takes LISTEN
 * without error but hands the listening server connection to other clients, so nothing arrives:
 * the server then says so at start rather than serving pages that never update.
 */
export async function notificationsArrive(
  sender: pg.ClientBase,
  listener: pg.ClientBase,
  timeoutMs: number,
): Promise<boolean> {
  const token = randomUUID();
  await listener.query(`LISTEN ${PROBE_CHANNEL}`);
  try {
    let stopWaiting: (arrived: boolean) => void = () => undefined;
    const arrived = new Promise<boolean>((resolve) => {
      const onNotice = (n: pg.Notification) => {
        if (n.channel === PROBE_CHANNEL && n.payload === token) stopWaiting(true);
      };
      const timer = setTimeout(() => stopWaiting(false), timeoutMs);
      timer.unref(); // a process that is shutting down does not wait for the answer
      stopWaiting = (value) => {
        clearTimeout(timer);
        listener.off('notification', onNotice);
        resolve(value);
      };
      listener.on('notification', onNotice);
    });
    try {
      await sender.query('SELECT pg_notify($1, $2)', [PROBE_CHANNEL, token]);
    } catch (e) {
      stopWaiting(false);
      throw e;
    }
    return await arrived;
  } finally {
    await listener.query(`UNLISTEN ${PROBE_CHANNEL}`).catch(() => undefined);
  }
}
