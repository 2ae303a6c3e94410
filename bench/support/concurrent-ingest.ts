import { rolloutEvents } from '@creditlab/client';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { syntheticBatchJson } from '../../libs/estimators/test/support/synthetic-rollouts';
import { ADMIN_KEY } from '../../test/support/test-server';
import { BENCH_ITERATION } from './synthetic-ingest';

/** One NDJSON request: one iteration of one run, as a trainer sends it. */
export interface PlannedRequest {
  run: number;
  body: Buffer;
  eventIds: string[];
  steps: number;
}

/**
 * Requests for `clients` clients over `runs` runs (client c writes run c mod runs), each about
 * `stepsPerClient` steps. Clients of one run take turns at its iterations (c, c + clients/runs,
 * …), so that two processes append to one run at once. Made before the clock starts.
 */
export function planRequests(
  clients: number,
  runs: number,
  stepsPerClient: number,
  seed: number,
): PlannedRequest[][] {
  const perRun = clients / runs;
  return Array.from({ length: clients }, (_, c) => {
    const run = c % runs;
    const requests: PlannedRequest[] = [];
    let steps = 0;
    for (let k = 0; steps < stepsPerClient; k++) {
      const iteration = k * perRun + Math.floor(c / runs);
      const batch = syntheticBatchJson(BENCH_ITERATION, seed + run * 1000 + iteration);
      // Steps as objects, the form bench:scale's figures in docs/benchmarks.md were measured with.
      const events = rolloutEvents(iteration, batch, 2000, { columnar: false });
      const n = batch.groups.reduce(
        (a, g) => a + g.trajectories.reduce((b, t) => b + t.steps.length, 0),
        0,
      );
      const body = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''));
      requests.push({ run, body, eventIds: events.map((e) => e.id), steps: n });
      steps += n;
    }
    return requests;
  });
}

async function post(
  url: string,
  path: string,
  body: Buffer | string,
  type: string,
): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': type, authorization: `Bearer ${ADMIN_KEY}` },
    body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as unknown;
}

export async function createRun(url: string, name: string): Promise<string> {
  const run = await post(
    url,
    '/v1/runs',
    JSON.stringify({ name, env: 'synthetic', method: 'gigpo' }),
    'application/json',
  );
  return (run as { id: string }).id;
}

export function appendNdjson(url: string, runId: string, body: Buffer | string): Promise<unknown> {
  return post(url, `/v1/runs/${runId}/events`, body, 'application/x-ndjson');
}

/** Finishing a run makes every iteration complete, so that recompute covers them all. */
export function finishRun(url: string, runId: string): Promise<unknown> {
  const event = { id: randomUUID(), type: 'run.finished', data: { status: 'completed' } };
  return appendNdjson(url, runId, `${JSON.stringify(event)}\n`);
}

/**
 * Every client at once, each sending its requests one after the other to `urlOf(client)`;
 * resolves with the wall time in seconds.
 */
export async function runClients(
  plan: PlannedRequest[][],
  runIds: string[],
  urlOf: (client: number) => string,
): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    plan.map(async (requests, c) => {
      for (const r of requests) await appendNdjson(urlOf(c), runIds[r.run] as string, r.body);
    }),
  );
  return (performance.now() - t0) / 1000;
}

/** What the database holds of one run against what was sent to it. */
export interface RunCheck {
  eventsSent: number;
  eventsStored: number;
  distinctStored: number;
  seqGapFree: boolean;
  stepsSent: number;
  stepsStored: number;
}

/** Each sent event stored once (by its id), no other event but run.created/run.finished, seq 1..n. */
export async function checkRun(
  pool: pg.Pool,
  runId: string,
  sent: PlannedRequest[],
  finished: boolean,
): Promise<RunCheck> {
  const ids = sent.flatMap((r) => r.eventIds);
  const stored = await pool.query<{ n: string; distinct_ids: string }>(
    'SELECT count(*) AS n, count(DISTINCT id) AS distinct_ids FROM events WHERE run_id = $1 AND id = ANY($2::uuid[])',
    [runId, ids],
  );
  const all = await pool.query<{ n: string; lo: string; hi: string; last_seq: string }>(
    `SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi, (SELECT last_seq FROM runs WHERE id = $1) AS last_seq
     FROM events WHERE run_id = $1`,
    [runId],
  );
  const steps = await pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM steps WHERE run_id = $1',
    [runId],
  );
  const a = all.rows[0] as { n: string; lo: string; hi: string; last_seq: string };
  const expectedTotal = ids.length + 1 + (finished ? 1 : 0); // run.created (and run.finished)
  return {
    eventsSent: ids.length,
    eventsStored: Number(stored.rows[0]?.n),
    distinctStored: Number(stored.rows[0]?.distinct_ids),
    seqGapFree:
      Number(a.n) === expectedTotal &&
      Number(a.lo) === 1 &&
      Number(a.hi) === Number(a.n) &&
      a.hi === a.last_seq,
    stepsSent: sent.reduce((n, r) => n + r.steps, 0),
    stepsStored: Number(steps.rows[0]?.n),
  };
}

export const exactlyOnce = (c: RunCheck) =>
  c.eventsStored === c.eventsSent &&
  c.distinctStored === c.eventsSent &&
  c.seqGapFree &&
  c.stepsStored === c.stepsSent;
