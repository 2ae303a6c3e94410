import { validateEvent } from '@creditlab/events';
import type pg from 'pg';
import { wireEvent } from './event-body';
import { bodyOf, eventDigest } from './event-digest';

const BATCH = 200;

/**
 * Gives every event stored before body hashes existed its hash (migration 20261201000000): the
 * event is put back together from the log as its client sent it (data and body), validated as on
 * arrival, and hashed the same way. Idempotent and resumable: it only touches events whose hash is
 * missing. Returns how many it hashed.
 */
export async function backfillEventHashes(pool: pg.Pool): Promise<number> {
  let done = 0;
  for (;;) {
    const res = await pool.query<{
      run_id: string;
      seq: string;
      id: string;
      type: string;
      data: Record<string, unknown>;
      body: Buffer | null;
    }>(
      `SELECT run_id, seq, id, type, data, body FROM events WHERE body_hash IS NULL
       ORDER BY run_id, seq LIMIT ${BATCH}`,
    );
    if (res.rows.length === 0) return done;
    const hashes = res.rows.map((row) => {
      const valid = validateEvent(wireEvent(row), 'server');
      if (!valid.ok)
        throw new Error(
          `event ${row.seq} of run ${row.run_id} no longer validates: ${valid.issue.path}: ${valid.issue.message}`,
        );
      return eventDigest(valid.event, bodyOf(valid.event));
    });
    await pool.query(
      `UPDATE events e SET body_hash = u.hash
       FROM unnest($1::uuid[], $2::bigint[], $3::bytea[]) AS u(run_id, seq, hash)
       WHERE e.run_id = u.run_id AND e.seq = u.seq AND e.body_hash IS NULL`,
      [res.rows.map((e) => e.run_id), res.rows.map((e) => e.seq), hashes],
    );
    done += res.rows.length;
  }
}
