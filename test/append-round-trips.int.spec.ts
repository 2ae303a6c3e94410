import { rolloutEvents } from '@creditlab/client';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { AppendSession, type StoredLookupRow } from '../apps/server/src/rollouts/append-session';
import { BODY_LINES } from '../apps/server/src/rollouts/event-origin';
import { firstEventLookup } from '../apps/server/src/rollouts/first-event-lookup';
import { beginLockAndAsk } from '../apps/server/src/rollouts/run-lock';
import { createTestDatabase } from './support/test-database';
import { prepareRepeatedStatements } from '../apps/server/src/database/repeated-statements';

/**
 * What an append of one iteration sends PostgreSQL once its run is locked, against PostgreSQL
 * itself: every statement is a round trip the request waits for, and every write to the socket
 * wakes the database's process, so their number is what a trainer logging each iteration pays on
 * top of its steps (docs/architecture.md, "Ingest"). Three of each, COMMIT included: the duplicate
 * check with the texts' lookup, the COPYs of the steps, groups and trajectories sent whole with
 * their data (pipeline.ts), and one statement with every other row and the run's summary, sent with
 * the COMMIT in one pipeline once the connection has that statement prepared
 * (repeated-statements.ts), as it has from a connection's second request of the kind on once the
 * process has sent that statement's text before.
 */
let pool: pg.Pool;
/** The appends' own connection (one: its prepared statements are known), as the ingest pool's are. */
let appender: pg.Pool;
beforeAll(async () => {
  const url = await createTestDatabase();
  pool = new pg.Pool({ connectionString: url, max: 2 });
  appender = new pg.Pool({ connectionString: url, max: 1 });
  prepareRepeatedStatements(appender);
  // The statements of a request of new texts, of stored ones and of duplicates only, each sent twice
  // (a text is prepared the second time the process sends it) before the tests count anything.
  for (let round = 0; round < 2; round++) {
    const runId = await newRun();
    await append(runId, iteration(0, 2));
    const stored = iteration(1, 2);
    await append(runId, stored);
    await append(runId, stored);
  }
});
afterAll(async () => {
  await appender.end();
  await pool.end();
});

interface Wire {
  stream: { _write: (...a: unknown[]) => void; _writev?: (...a: unknown[]) => void };
  on(event: 'readyForQuery', listener: () => void): void;
}

/** Counts the connection's writes to its socket and the answers it waits for (ReadyForQuery). */
function countTraffic(client: pg.PoolClient): { writes: number; roundTrips: number } {
  const counts = { writes: 0, roundTrips: 0 };
  const wire = (client as unknown as { connection: Wire }).connection;
  const socket = wire.stream;
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method];
    if (!original) continue;
    socket[method] = function (this: unknown, ...args: unknown[]) {
      counts.writes++;
      return original.apply(this, args);
    };
  }
  wire.on('readyForQuery', () => counts.roundTrips++);
  return counts;
}

async function newRun(): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO runs (name, project, env, method) VALUES ('r', 'default', 'e', 'grpo') RETURNING id`,
  );
  return rows[0]!.id;
}

/** An iteration of two trajectories of `steps` steps, as the TypeScript client sends it. */
const iteration = (i: number, steps: number) =>
  rolloutEvents(i, {
    groups: [
      {
        id: `g${i}`,
        trajectories: [0, 1].map((t) => ({
          id: `g${i}/t${t}`,
          steps: Array.from({ length: steps }, (_, s) => ({
            state: `state ${s % 5}`,
            action: `action ${(s + t) % 3}`,
            reward: s === steps - 1 ? t : 0,
            nll: 0.5,
          })),
        })),
      },
    ],
  });

/**
 * Appends `events` as the appender does. `ahead`: the first event's lookup is asked with the lock
 * (first-event-lookup.ts), as the appender asks it; else the session looks up everything itself.
 */
async function append(
  runId: string,
  events: unknown[],
  { ahead = false, via = appender }: { ahead?: boolean; via?: pg.Pool } = {},
) {
  const client = await via.connect();
  try {
    const lookup = ahead ? firstEventLookup(runId, events[0]) : undefined;
    const { locked, rows } = await beginLockAndAsk<StoredLookupRow>(client, runId, lookup?.sql);
    const traffic = countTraffic(client);
    const session = new AppendSession(
      client,
      pool,
      runId,
      locked!.run,
      locked!.now,
      BODY_LINES,
      'client',
    );
    if (lookup) session.lookedUpAhead(lookup, rows);
    for (const [n, value] of events.entries()) await session.add({ position: n + 1, value });
    const result = await session.finish({ notify: true, commit: true });
    return { result, sent: { ...traffic } };
  } catch (e) {
    await client.query('ROLLBACK');
    throw e;
  } finally {
    client.release();
  }
}

test('an iteration appended once its run is locked: three round trips and three writes, COMMIT included', async () => {
  const runId = await newRun();
  const first = await append(runId, iteration(0, 40));
  expect(first.result).toMatchObject({ accepted: 1, duplicates: 0, lastSeq: 1, steps: 80 });
  expect(first.sent).toEqual({ writes: 3, roundTrips: 3 });

  // A later iteration of the same run, whose texts are all stored: the same three.
  const second = await append(runId, iteration(1, 40));
  expect(second.result).toMatchObject({ accepted: 1, lastSeq: 2, steps: 80 });
  expect(second.sent).toEqual({ writes: 3, roundTrips: 3 });
  const open = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
  );
  expect(open.rows[0]?.n).toBe(0); // committed: the connection went back idle, not in a transaction

  // What the single last statement carried is all there: the log, the steps, the rollouts, the summary.
  const stored = await pool.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM events WHERE run_id = $1) AS events,
            (SELECT coalesce(sum(step_count), 0)::int FROM step_slices WHERE run_id = $1) AS steps,
            (SELECT count(*)::int FROM trajectories WHERE run_id = $1) AS trajectories,
            (SELECT count(*)::int FROM rollout_groups WHERE run_id = $1) AS groups,
            (SELECT count(*)::int FROM iterations WHERE run_id = $1) AS iterations,
            (SELECT count(*)::int FROM texts WHERE run_id = $1) AS texts,
            (SELECT last_seq::int FROM runs WHERE id = $1) AS "lastSeq",
            (SELECT last_iteration FROM runs WHERE id = $1) AS "lastIteration"`,
    [runId],
  );
  expect(stored.rows[0]).toEqual({
    events: 2,
    steps: 160,
    trajectories: 4,
    groups: 2,
    iterations: 2,
    texts: 8,
    lastSeq: 2,
    lastIteration: 1,
  });
});

test('a connection’s first requests send their statements one by one, which prepares them', async () => {
  const fresh = new pg.Pool({ connectionString: pool.options.connectionString, max: 1 });
  prepareRepeatedStatements(fresh);
  try {
    const runId = await newRun();
    await append(runId, iteration(0, 5)); // the run's texts stored: the next requests are alike
    const sent = [];
    for (let i = 1; i <= 3; i++)
      sent.push((await append(runId, iteration(i, 5), { via: fresh })).sent);
    // The check, the COPYs, the statement, COMMIT, until this connection has the statement prepared:
    // the process has sent its text before, so the connection's first request prepares it.
    expect(sent[0]).toEqual({ writes: 4, roundTrips: 4 });
    expect(sent[1]).toEqual({ writes: 3, roundTrips: 3 });
    expect(sent[2]).toEqual({ writes: 3, roundTrips: 3 });
  } finally {
    await fresh.end();
  }
});

test('a request of duplicates only still ends with the run’s summary, and stores nothing twice', async () => {
  const runId = await newRun();
  const events = iteration(0, 3);
  await append(runId, events);
  const again = await append(runId, events);
  expect(again.result).toMatchObject({ accepted: 0, duplicates: 1, lastSeq: 1 });
  // The duplicate check, then the summary's statement (the run's row as it was) with COMMIT.
  expect(again.sent).toEqual({ writes: 2, roundTrips: 2 });
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM events WHERE run_id = $1',
    [runId],
  );
  expect(rows[0]?.n).toBe(1);
});

test('texts met in an earlier chunk, stored before, or new in a later chunk are each stored once', async () => {
  const runId = await newRun();
  // Stored before the request: "state 0".."state 4", "action 0".."action 2".
  await append(runId, iteration(0, 5));
  // 1,100 events: two chunks (the second's lookup ahead asks on another connection, which does not
  // see the first chunk's texts). Event k's state is new in the chunk of event k, or one the first
  // chunk stored, or one stored before the request.
  const events = Array.from({ length: 1100 }, (_, k) => ({
    id: randomUUID(),
    type: 'rollouts.appended',
    data: {
      iteration: 1,
      groups: [
        {
          id: `g${k}`,
          trajectories: [
            {
              id: `t${k}`,
              steps: [
                {
                  state: k < 1000 || k % 2 === 0 ? `new ${k}` : `new ${k - 1000}`,
                  action: `action ${k % 3}`,
                  nextState: `state ${k % 5}`,
                  reward: 1,
                },
              ],
            },
          ],
        },
      ],
    },
  }));
  const { result } = await append(runId, events);
  expect(result).toMatchObject({ accepted: 1100, steps: 1100 });
  const texts = await pool.query<{ text: string; n: number }>(
    'SELECT text, count(*)::int AS n FROM texts WHERE run_id = $1 GROUP BY text',
    [runId],
  );
  const expected = new Set([
    ...[0, 1, 2, 3, 4].map((i) => `state ${i}`),
    ...[0, 1, 2].map((i) => `action ${i}`),
    ...events.map((e) => e.data.groups[0]!.trajectories[0]!.steps[0]!.state),
  ]);
  expect(new Set(texts.rows.map((r) => r.text))).toEqual(expected);
  expect(texts.rows.every((r) => r.n === 1)).toBe(true);
  // Every step of the run names texts the run has.
  const missing = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM steps s WHERE s.run_id = $1 AND NOT EXISTS
       (SELECT 1 FROM texts t WHERE t.run_id = s.run_id AND t.id = s.state_id)`,
    [runId],
  );
  expect(missing.rows[0]?.n).toBe(0);
});

test('with the first event looked up with the lock, as the appender does: two round trips, two writes', async () => {
  const runId = await newRun();
  const first = await append(runId, iteration(0, 40), { ahead: true });
  expect(first.result).toMatchObject({ accepted: 1, duplicates: 0, lastSeq: 1, steps: 80 });
  expect(first.sent).toEqual({ writes: 2, roundTrips: 2 }); // the COPYs, the statement and COMMIT

  // Texts stored before (every one of iteration 1's), a retry of a stored event, and a request whose
  // second event, with a new text, is looked up by the session itself.
  const again = iteration(1, 40);
  await append(runId, again, { ahead: true });
  const retry = await append(runId, again, { ahead: true });
  expect(retry.result).toMatchObject({ accepted: 0, duplicates: 1, lastSeq: 2 });
  expect(retry.sent).toEqual({ writes: 1, roundTrips: 1 }); // the run's summary and COMMIT
  const mixed = await append(
    runId,
    [
      ...iteration(2, 3),
      ...rolloutEvents(3, {
        groups: [
          {
            id: 'x',
            trajectories: [
              { id: 'x/t', steps: [{ state: 'brand new', action: 'action 0', reward: 1 }] },
            ],
          },
        ],
      }),
    ],
    { ahead: true },
  );
  expect(mixed.result).toMatchObject({ accepted: 2, lastSeq: 4 });
  expect(mixed.sent).toEqual({ writes: 3, roundTrips: 3 }); // the second event's lookup, COPYs, statement and COMMIT

  const reused = { ...(again[0] as object), data: (iteration(9, 2)[0] as { data: unknown }).data };
  await expect(append(runId, [reused], { ahead: true })).rejects.toThrow(/already used by event 2/);

  const texts = await pool.query<{ text: string }>('SELECT text FROM texts WHERE run_id = $1', [
    runId,
  ]);
  expect(new Set(texts.rows.map((r) => r.text))).toEqual(
    new Set([
      'state 0',
      'state 1',
      'state 2',
      'state 3',
      'state 4',
      'action 0',
      'action 1',
      'action 2',
      'brand new',
    ]),
  );
  const missing = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM steps s WHERE s.run_id = $1 AND (
       NOT EXISTS (SELECT 1 FROM texts t WHERE t.run_id = s.run_id AND t.id = s.state_id) OR
       NOT EXISTS (SELECT 1 FROM texts t WHERE t.run_id = s.run_id AND t.id = s.action_id))`,
    [runId],
  );
  expect(missing.rows[0]?.n).toBe(0);
});
