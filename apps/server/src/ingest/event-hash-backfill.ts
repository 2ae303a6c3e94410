import { eventBodyHash } from '@creditlab/events';
import type pg from 'pg';
import { unpackFloat32 } from './copy-text';

interface StoredEvent {
  run_id: string;
  seq: string;
  type: string;
  data: Record<string, unknown>;
}

interface StoredSlice {
  id: string;
  outcome?: string;
  firstStepIndex: number;
  stepCount: number;
}

interface StepRow {
  seq: string;
  iteration: number;
  key: string;
  idx: number;
  state: string;
  action: string;
  reward: number;
  nll: number | null;
  token_logprobs: Buffer | null;
  embedding: Buffer | null;
  value: number | null;
  next_state: string | null;
  next_value: number | null;
  extra: Record<string, unknown> | null;
}

const BATCH = 200;

/**
 * Gives every event stored before body hashes existed its hash (migration 20261201000000): the
 * event is put back together from what is stored — its data, and for step-bearing events their
 * step rows — exactly as the server would have held it on arrival, and hashed the same way.
 * Idempotent and resumable: it only touches events whose hash is missing. Returns how many.
 */
export async function backfillEventHashes(pool: pg.Pool): Promise<number> {
  let done = 0;
  for (;;) {
    const res = await pool.query<StoredEvent>(
      `SELECT run_id, seq, type, data FROM events WHERE body_hash IS NULL ORDER BY run_id, seq LIMIT ${BATCH}`,
    );
    if (res.rows.length === 0) return done;
    const steps = await stepsOf(pool, res.rows);
    const hashes = res.rows.map((e) => eventBodyHash(e.type, originalData(e, steps)));
    await pool.query(
      `UPDATE events e SET body_hash = u.hash
       FROM unnest($1::uuid[], $2::bigint[], $3::bytea[]) AS u(run_id, seq, hash)
       WHERE e.run_id = u.run_id AND e.seq = u.seq AND e.body_hash IS NULL`,
      [res.rows.map((e) => e.run_id), res.rows.map((e) => e.seq), hashes],
    );
    done += res.rows.length;
  }
}

/** The step rows of the step-bearing events among `events`, by `run/seq/trajectory key`. */
async function stepsOf(pool: pg.Pool, events: StoredEvent[]): Promise<Map<string, StepRow[]>> {
  const refs = events.flatMap((e) =>
    slicesOf(e).map((s) => ({ run: e.run_id, seq: e.seq, iteration: s.iteration, key: s.id })),
  );
  const out = new Map<string, StepRow[]>();
  if (refs.length === 0) return out;
  const res = await pool.query<StepRow & { run_id: string }>(
    `SELECT s.run_id, s.seq, t.iteration, t.key, s.idx, st.text AS state, ac.text AS action, s.reward, s.nll,
            s.token_logprobs, s.embedding, s.value, ns.text AS next_state, s.next_value, s.extra
     FROM unnest($1::uuid[], $2::bigint[], $3::int[], $4::text[]) AS r(run_id, seq, iteration, key)
     JOIN trajectories t ON t.run_id = r.run_id AND t.iteration = r.iteration AND t.key = r.key
     JOIN steps s ON s.trajectory_id = t.id AND s.seq = r.seq
     JOIN texts st ON st.id = s.state_id JOIN texts ac ON ac.id = s.action_id
     LEFT JOIN texts ns ON ns.id = s.next_state_id
     ORDER BY s.idx`,
    [
      refs.map((r) => r.run),
      refs.map((r) => r.seq),
      refs.map((r) => r.iteration),
      refs.map((r) => r.key),
    ],
  );
  for (const row of res.rows) {
    const k = `${row.run_id}/${row.seq}/${row.key}`;
    const list = out.get(k) ?? [];
    list.push(row);
    out.set(k, list);
  }
  return out;
}

/** The trajectory slices a stored step-bearing event names (its iteration, key and step range). */
function slicesOf(e: StoredEvent): (StoredSlice & { iteration: number })[] {
  const iteration = e.data.iteration as number;
  if (e.type === 'steps.appended') {
    const d = e.data as { trajectoryId: string; firstStepIndex: number; stepCount: number };
    return [
      { id: d.trajectoryId, firstStepIndex: d.firstStepIndex, stepCount: d.stepCount, iteration },
    ];
  }
  if (e.type !== 'rollouts.appended') return [];
  const groups = e.data.groups as { trajectories: StoredSlice[] }[];
  return groups.flatMap((g) => g.trajectories.map((t) => ({ ...t, iteration })));
}

/** The event's data as it arrived: the stored data, with step-bearing events' steps put back. */
function originalData(e: StoredEvent, steps: Map<string, StepRow[]>): unknown {
  const stepsOfSlice = (s: StoredSlice) =>
    (steps.get(`${e.run_id}/${e.seq}/${s.id}`) ?? [])
      .filter((r) => r.idx >= s.firstStepIndex && r.idx < s.firstStepIndex + s.stepCount)
      .map(toStep);
  if (e.type === 'steps.appended') {
    const { stepCount: _n, ...rest } = e.data as unknown as StoredSlice & Record<string, unknown>;
    return { ...rest, steps: stepsOfSlice(slicesOf(e)[0] as StoredSlice) };
  }
  if (e.type !== 'rollouts.appended') return e.data;
  const groups = e.data.groups as { id: string; trajectories: StoredSlice[] }[];
  return {
    iteration: e.data.iteration,
    groups: groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map((t) => ({
        id: t.id,
        ...(t.outcome ? { outcome: t.outcome } : {}),
        steps: stepsOfSlice(t),
      })),
    })),
  };
}

function toStep(r: StepRow): Record<string, unknown> {
  return {
    ...(r.extra ?? {}),
    state: r.state,
    action: r.action,
    reward: r.reward,
    nll: r.nll ?? undefined,
    tokenLogprobs: r.token_logprobs
      ? Float32Array.from(unpackFloat32(r.token_logprobs))
      : undefined,
    embedding: r.embedding ? Float32Array.from(unpackFloat32(r.embedding)) : undefined,
    value: r.value ?? undefined,
    nextState: r.next_state ?? undefined,
    nextValue: r.next_value ?? undefined,
  };
}
