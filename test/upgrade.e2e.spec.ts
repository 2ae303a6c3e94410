import { CreditlabClient, newEventId } from '@creditlab/client';
import { ensureDatabase, MIGRATIONS_DIR, runMigrations } from '@creditlab/db';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadTables } from './support/database-snapshot';
import { sqlQuery } from './support/sql-query';
import { ADMIN_KEY, gql, spawnServer } from './support/test-server';

/**
 * A database made by the schema before event bodies and natural-key projections
 * (test/fixtures/databases/before-projections.jsonl) is upgraded by the server's start: the
 * migration moves every step into its event's body, the projections are rebuilt from the log, and
 * nothing that was acknowledged is lost or changed.
 */
const FIXTURE = path.join(__dirname, 'fixtures/databases/before-projections.jsonl');
const BEFORE = '20261202000000';

const query = sqlQuery;

/** Every step, in natural keys and texts: what a reader of the old schema saw. */
const OLD_STEPS = `
  SELECT t.run_id, t.iteration, g.key AS group_key, t.key AS trajectory_key, s.idx, s.seq,
         st.text AS state, ac.text AS action, s.reward, s.nll, s.token_logprobs, s.embedding, s.value,
         ns.text AS next_state, s.next_value, s.extra
  FROM steps s JOIN trajectories t ON t.id = s.trajectory_id JOIN rollout_groups g ON g.id = t.group_id
  JOIN texts st ON st.id = s.state_id JOIN texts ac ON ac.id = s.action_id
  LEFT JOIN texts ns ON ns.id = s.next_state_id
  ORDER BY 1, 2, 3, 4, 5`;
const NEW_STEPS = `
  SELECT s.run_id, s.iteration, g.key AS group_key, t.key AS trajectory_key, s.idx, s.seq,
         st.text AS state, ac.text AS action, s.reward, s.nll, s.token_logprobs, s.embedding, s.value,
         ns.text AS next_state, s.next_value, s.extra
  FROM steps s
  JOIN trajectories t ON (t.run_id, t.iteration, t.group_ord, t.ord) = (s.run_id, s.iteration, s.group_ord, s.traj_ord)
  JOIN rollout_groups g ON (g.run_id, g.iteration, g.ord) = (s.run_id, s.iteration, s.group_ord)
  JOIN texts st ON st.run_id = s.run_id AND st.id = s.state_id
  JOIN texts ac ON ac.run_id = s.run_id AND ac.id = s.action_id
  LEFT JOIN texts ns ON ns.run_id = s.run_id AND ns.id = s.next_state_id
  ORDER BY 1, 2, 3, 4, 5`;
const OLD_TRAJECTORIES = `
  SELECT t.run_id, t.iteration, g.ord AS group_ord, g.key AS group_key, t.ord, t.key, t.step_count, t.return,
         COALESCE(t.outcome, CASE WHEN t.return > 0 THEN 'success' ELSE 'failure' END) AS outcome,
         t.outcome IS NOT NULL AS outcome_given
  FROM trajectories t JOIN rollout_groups g ON g.id = t.group_id ORDER BY 1, 2, 3, 5`;
const NEW_TRAJECTORIES = `
  SELECT t.run_id, t.iteration, t.group_ord, g.key AS group_key, t.ord, t.key, t.step_count, t.return,
         t.outcome, t.outcome_given
  FROM trajectories t
  JOIN rollout_groups g ON (g.run_id, g.iteration, g.ord) = (t.run_id, t.iteration, t.group_ord)
  ORDER BY 1, 2, 3, 5`;
const RUNS =
  'SELECT id, name, project, status, last_seq, last_iteration, embedding_dim, summary, finished_at FROM runs ORDER BY id';
/** Checkpoints with their bytes: one value before, parts since (migrations/20261208000000_checkpoint_parts). */
// size_bytes as bigint, as it is since 20261212000000_checkpoints_in_a_bucket (it was an integer).
const CHECKPOINT_FACTS =
  'c.run_id, c.iteration, c.format, c.sha256, c.size_bytes::bigint AS size_bytes, c.created_at';
const OLD_CHECKPOINTS = `SELECT ${CHECKPOINT_FACTS}, c.data FROM checkpoints c ORDER BY 1, 2`;
const NEW_CHECKPOINTS = `
  SELECT ${CHECKPOINT_FACTS},
         (SELECT string_agg(p.data, ''::bytea ORDER BY p.ord) FROM checkpoint_parts p
          WHERE p.run_id = c.run_id AND p.upload_id = c.upload_id) AS data
  FROM checkpoints c ORDER BY 1, 2`;
const EVENTS =
  'SELECT run_id, seq, id, type, iteration, data, body_hash FROM events ORDER BY run_id, seq';
const KEPT = [
  'SELECT * FROM projects ORDER BY name',
  // the keys of the old database (the test server registers its own admin key besides)
  `SELECT id, prefix, secret_hash, project, role, name, created_by, created_at, revoked_at FROM api_keys
   WHERE created_at <= $1 ORDER BY id`,
  'SELECT * FROM advantage_sets ORDER BY id',
  'SELECT id, set_id, run_id, iterations, status, error FROM recompute_jobs ORDER BY id',
];

test('the upgrade keeps every step, trajectory, run summary, event and key; the server then serves the old runs', async () => {
  const url = await ensureDatabase(
    process.env.CREDITLAB_TEST_DATABASE_URL as string,
    `test_${randomBytes(6).toString('hex')}`,
  );
  const before = mkdtempSync(path.join(tmpdir(), 'creditlab-migrations-'));
  for (const name of readdirSync(MIGRATIONS_DIR).filter((n) => n < BEFORE))
    symlinkSync(path.join(MIGRATIONS_DIR, name), path.join(before, name));
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await runMigrations(pool, before);
  await pool.end();
  await loadTables(url, readFileSync(FIXTURE, 'utf8'));

  const old = {
    steps: await query(url, OLD_STEPS),
    trajectories: await query(url, OLD_TRAJECTORIES),
    runs: await query(url, RUNS),
    events: await query(url, EVENTS),
    checkpoints: await query(url, OLD_CHECKPOINTS),
    kept: [] as unknown[],
  };
  const loadedAt = new Date();
  old.kept = await Promise.all(
    KEPT.map((sql) => query(url, sql, sql.includes('$1') ? [loadedAt] : [])),
  );
  expect(old.steps.length).toBeGreaterThan(300);
  expect(old.runs.length).toBe(4);

  const server = await spawnServer({ DATABASE_URL: url });
  try {
    expect(server.output()).toContain('20261202000000_projections');
    expect(server.output()).toContain('rebuilt the projections of 4 runs');
    expect(await query(url, NEW_STEPS)).toEqual(old.steps);
    expect(await query(url, NEW_TRAJECTORIES)).toEqual(old.trajectories);
    expect(await query(url, RUNS)).toEqual(old.runs);
    expect(await query(url, EVENTS)).toEqual(old.events);
    expect(old.checkpoints).toHaveLength(1);
    expect(await query(url, NEW_CHECKPOINTS)).toEqual(old.checkpoints);
    expect(
      await Promise.all(KEPT.map((sql) => query(url, sql, sql.includes('$1') ? [loadedAt] : []))),
    ).toEqual(old.kept);

    // The upgraded runs take new events where they left off, and serve their advantages.
    const streamed = old.runs.find((r) => r.name === 'fixtures') as { id: string };
    const client = new CreditlabClient({ url: server.url, apiKey: ADMIN_KEY });
    const last = old.trajectories.find((t) => t.run_id === streamed.id) as {
      iteration: number;
      group_key: string;
      key: string;
      step_count: number;
    };
    await client.appendEvents(streamed.id, [
      {
        id: newEventId(),
        type: 'steps.appended',
        data: {
          iteration: last.iteration,
          groupId: last.group_key,
          trajectoryId: last.key,
          firstStepIndex: last.step_count,
          steps: [{ state: 's', action: 'a', reward: 1, embedding: Array(8).fill(0.5) }],
        },
      },
    ]);
    const res = await gql<{ run: { iterations: { stepCount: number }[] } }>(
      server,
      'query($id: ID!) { run(id: $id) { iterations { stepCount } } }',
      { id: streamed.id },
    );
    const oldCount = old.steps.filter((s) => s.run_id === streamed.id).length;
    expect(res.data!.run.iterations.reduce((n, i) => n + i.stepCount, 0)).toBe(oldCount + 1);
    const online = await client.advantages(streamed.id, last.iteration, 'gigpo');
    expect(online.advantages.length).toBe(
      old.steps.filter((s) => s.run_id === streamed.id && s.iteration === last.iteration).length +
        1,
    );
  } finally {
    await server.stop();
  }
});
