-- The read side as projections of the event log (docs/architecture.md, "Projections").
--
-- Before: the steps of rollouts.appended / steps.appended events lived only in `steps`, keyed by a
-- surrogate trajectory id, so nothing could be dropped and rebuilt. Now:
--   * the log is `runs` (the stream's identity) and `events`, whose step-bearing events carry their
--     steps in `body` (JSON: one array of steps per trajectory slice, vectors as base64 float32);
--   * texts, rollout_groups, trajectories, steps, iterations and the runs' summary columns are
--     projections with natural keys (ids derived from the events), rebuilt by `npm run db:rebuild`;
--   * stored advantages are stamped with the log position they were computed from.
-- The projections of existing runs are rebuilt from the log by the server right after this migration
-- (runs.projection_version = 0 marks them), by the same code that maintains them at ingest.

-- 1. Event bodies, put together from the old step rows.
ALTER TABLE events ADD COLUMN body bytea;
-- Bodies are read whole and rarely (rebuilds); compressing them would cost every ingest.
ALTER TABLE events ALTER COLUMN body SET STORAGE EXTERNAL;

ALTER TABLE events DISABLE TRIGGER events_append_only;
WITH slices AS (
  SELECT e.run_id, e.seq, e.iteration, s.n, s.key, s.first, s.cnt
  FROM events e
  CROSS JOIN LATERAL (
    SELECT (row_number() OVER (ORDER BY g.gi, t.ti))::int AS n, t.tr->>'id' AS key,
           (t.tr->>'firstStepIndex')::int AS first, (t.tr->>'stepCount')::int AS cnt
    FROM jsonb_array_elements(e.data->'groups') WITH ORDINALITY AS g(grp, gi),
         jsonb_array_elements(g.grp->'trajectories') WITH ORDINALITY AS t(tr, ti)
    WHERE e.type = 'rollouts.appended'
    UNION ALL
    SELECT 1, e.data->>'trajectoryId', (e.data->>'firstStepIndex')::int, (e.data->>'stepCount')::int
    WHERE e.type = 'steps.appended'
  ) s
  WHERE e.type IN ('rollouts.appended', 'steps.appended')
),
slice_steps AS (
  SELECT sl.run_id, sl.seq, sl.n,
         COALESCE((
           SELECT jsonb_agg(
                    COALESCE(st.extra, '{}'::jsonb) || jsonb_strip_nulls(jsonb_build_object(
                      'state', tx_s.text,
                      'action', tx_a.text,
                      'reward', st.reward,
                      'nll', st.nll,
                      'tokenLogprobs', translate(encode(st.token_logprobs, 'base64'), E'\n', ''),
                      'embedding', translate(encode(st.embedding, 'base64'), E'\n', ''),
                      'value', st.value,
                      'nextState', tx_n.text,
                      'nextValue', st.next_value))
                    ORDER BY st.idx)
           FROM trajectories t
           JOIN steps st ON st.trajectory_id = t.id
           JOIN texts tx_s ON tx_s.id = st.state_id
           JOIN texts tx_a ON tx_a.id = st.action_id
           LEFT JOIN texts tx_n ON tx_n.id = st.next_state_id
           WHERE t.run_id = sl.run_id AND t.iteration = sl.iteration AND t.key = sl.key
             AND st.idx >= sl.first AND st.idx < sl.first + sl.cnt
         ), '[]'::jsonb) AS steps
  FROM slices sl
)
UPDATE events e SET body = b.body
FROM (
  SELECT run_id, seq, convert_to(jsonb_agg(steps ORDER BY n)::text, 'UTF8') AS body
  FROM slice_steps GROUP BY run_id, seq
) b
WHERE e.run_id = b.run_id AND e.seq = b.seq;
ALTER TABLE events ENABLE TRIGGER events_append_only;

-- Events stay append-only: the only change ever allowed is filling a missing body hash.
CREATE OR REPLACE FUNCTION refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.body_hash IS NULL AND NEW.body_hash IS NOT NULL
     AND (OLD.run_id, OLD.seq, OLD.id, OLD.type, OLD.iteration, OLD.data, OLD.step_count, OLD.recorded_at, OLD.body)
         IS NOT DISTINCT FROM
         (NEW.run_id, NEW.seq, NEW.id, NEW.type, NEW.iteration, NEW.data, NEW.step_count, NEW.recorded_at, NEW.body) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;

-- 2. The projections, with natural keys. Stored advantages are recomputed on demand: the rows
--    computed before this migration carry no log position, so none of them can be trusted fresh.
DROP TABLE steps;
DROP TABLE trajectories;
DROP TABLE rollout_groups;
DROP TABLE texts;
DELETE FROM advantage_set_iterations;
UPDATE recompute_jobs SET done = 0;

-- State and action texts, once per run. The id is the first 8 bytes of the text's SHA-256 (as a
-- signed bigint): derived from the text, so a rebuild gives every text the same id.
CREATE TABLE texts (
  run_id uuid   NOT NULL REFERENCES runs (id),
  id     bigint NOT NULL,
  text   text   NOT NULL,
  PRIMARY KEY (run_id, id)
);

-- Task groups of an iteration in order of first appearance (ord): with the trajectory's ord and
-- the step index, the canonical step order.
CREATE TABLE rollout_groups (
  run_id    uuid    NOT NULL REFERENCES runs (id),
  iteration integer NOT NULL,
  ord       integer NOT NULL,
  key       text    NOT NULL,
  PRIMARY KEY (run_id, iteration, ord),
  UNIQUE (run_id, iteration, key)
);

CREATE TABLE trajectories (
  run_id        uuid    NOT NULL REFERENCES runs (id),
  iteration     integer NOT NULL,
  group_ord     integer NOT NULL,
  ord           integer NOT NULL, -- within its group
  key           text    NOT NULL,
  -- resolved at ingest: as given, else success iff the return is > 0 (resolveOutcome)
  outcome       text    NOT NULL CHECK (outcome IN ('success', 'failure', 'truncated')),
  outcome_given boolean NOT NULL,
  step_count    integer NOT NULL,
  return        double precision NOT NULL,
  PRIMARY KEY (run_id, iteration, group_ord, ord),
  UNIQUE (run_id, iteration, key),
  FOREIGN KEY (run_id, iteration, group_ord) REFERENCES rollout_groups (run_id, iteration, ord)
);

-- One row per step, keyed by where it sits: an iteration read in canonical order is one range of
-- this primary key. No foreign keys, deliberately: the ingest hot path writes it, its one writer
-- resolves every reference in the same transaction, and per-row checks cost ~40 % of throughput.
CREATE TABLE steps (
  run_id         uuid             NOT NULL,
  iteration      integer          NOT NULL,
  group_ord      integer          NOT NULL,
  traj_ord       integer          NOT NULL,
  idx            integer          NOT NULL,
  seq            bigint           NOT NULL, -- the event that carried it
  state_id       bigint           NOT NULL, -- texts (run_id, id)
  action_id      bigint           NOT NULL,
  reward         double precision NOT NULL,
  nll            double precision,
  token_logprobs bytea,            -- little-endian float32
  embedding      bytea,            -- little-endian float32
  value          double precision,
  next_state_id  bigint,
  next_value     double precision,
  extra          jsonb,            -- fields beyond rollout-batch/v1, as sent
  PRIMARY KEY (run_id, iteration, group_ord, traj_ord, idx)
);

-- What each iteration holds, and the log position its estimator inputs reflect: the seq of the
-- last event that changed its steps or an outcome. Stored advantages carry the position they were
-- computed from; a different one here means they are stale.
CREATE TABLE iterations (
  run_id                  uuid    NOT NULL REFERENCES runs (id),
  iteration               integer NOT NULL,
  group_count             integer NOT NULL DEFAULT 0,
  trajectory_count        integer NOT NULL DEFAULT 0,
  step_count              integer NOT NULL DEFAULT 0,
  inputs_seq              bigint,
  metrics                 jsonb   NOT NULL DEFAULT '{}', -- last value of each metric logged
  evaluation_success_rate double precision,
  last_seq                bigint  NOT NULL,              -- last event about this iteration
  PRIMARY KEY (run_id, iteration)
);

-- Projections are rewritten only by a rebuild (which sets creditlab.rebuild for its transaction).
CREATE OR REPLACE FUNCTION refuse_projection_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('creditlab.rebuild', true) = 'on' THEN
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
  END IF;
  RAISE EXCEPTION '% is append-only outside a rebuild: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER steps_append_only BEFORE UPDATE OR DELETE ON steps
  FOR EACH ROW EXECUTE FUNCTION refuse_projection_change();
CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON steps
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_projection_change();

-- 3. Advantages stamped with their log position; a recomputation after late steps is a new version.
ALTER TABLE advantage_set_iterations ADD COLUMN inputs_seq bigint NOT NULL;
ALTER TABLE advantage_set_iterations DROP CONSTRAINT advantage_set_iterations_pkey;
ALTER TABLE advantage_set_iterations ADD PRIMARY KEY (set_id, iteration, inputs_seq);

-- 4. Which version of the projection code built each run's projections: the runs already here (0)
--    are rebuilt from their events at the server's next start; new runs start at version 1.
ALTER TABLE runs ADD COLUMN projection_version integer NOT NULL DEFAULT 0;
ALTER TABLE runs ALTER COLUMN projection_version SET DEFAULT 1;
