-- The run event log and the step store (docs/architecture.md, "Event store").
-- Events and steps are append-only: triggers below refuse UPDATE, DELETE and TRUNCATE.

CREATE TABLE runs (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name           text        NOT NULL,
  project        text        NOT NULL,
  env            text        NOT NULL,
  method         text        NOT NULL,
  params         jsonb       NOT NULL DEFAULT '{}',
  config         jsonb       NOT NULL DEFAULT '{}',
  seed           bigint,
  tags           text[]      NOT NULL DEFAULT '{}',
  parent_run_id  uuid        REFERENCES runs (id),
  fork_iteration integer,
  -- projections of the run's own stream, maintained in the appending transaction
  status         text        NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'completed', 'failed', 'aborted')),
  last_seq       bigint      NOT NULL DEFAULT 0,
  last_iteration integer,
  embedding_dim  integer,
  summary        jsonb,
  created_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz
);
CREATE INDEX runs_project_created_idx ON runs (project, created_at DESC, id DESC);
CREATE INDEX runs_created_idx ON runs (created_at DESC, id DESC);
CREATE INDEX runs_tags_idx ON runs USING gin (tags);

-- One stream per run; seq is gap-free per run; id is the client's idempotency key.
CREATE TABLE events (
  run_id      uuid        NOT NULL REFERENCES runs (id),
  seq         bigint      NOT NULL CHECK (seq > 0),
  id          uuid        NOT NULL,
  type        text        NOT NULL,
  iteration   integer,
  -- the event's payload; for rollouts.appended / steps.appended the steps are not
  -- repeated here: they are the rows of `steps` carrying this seq
  data        jsonb       NOT NULL,
  step_count  integer     NOT NULL DEFAULT 0,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq),
  UNIQUE (run_id, id)
);
CREATE INDEX events_type_idx ON events (run_id, type, seq);

-- State and action texts, once per run (anchor states repeat across a group).
CREATE TABLE texts (
  id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id uuid   NOT NULL REFERENCES runs (id),
  hash   bytea  NOT NULL, -- sha-256 of the UTF-8 text: the dedup key
  text   text   NOT NULL,
  UNIQUE (run_id, hash)
);

-- Task groups and trajectories of an iteration, in order of first appearance
-- (ord), which is the canonical step order together with the step index.
CREATE TABLE rollout_groups (
  id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id    uuid    NOT NULL REFERENCES runs (id),
  iteration integer NOT NULL,
  ord       integer NOT NULL,
  key       text    NOT NULL,
  UNIQUE (run_id, iteration, key),
  UNIQUE (run_id, iteration, ord)
);

CREATE TABLE trajectories (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  group_id   bigint  NOT NULL REFERENCES rollout_groups (id),
  run_id     uuid    NOT NULL REFERENCES runs (id),
  iteration  integer NOT NULL,
  ord        integer NOT NULL, -- within its group
  key        text    NOT NULL,
  outcome    text CHECK (outcome IN ('success', 'failure', 'truncated')), -- as given; NULL: derived from the return
  -- projections maintained by the appending transaction
  step_count integer NOT NULL DEFAULT 0,
  return     double precision NOT NULL DEFAULT 0,
  UNIQUE (run_id, iteration, key),
  UNIQUE (group_id, ord)
);
CREATE INDEX trajectories_run_iteration_idx ON trajectories (run_id, iteration);

-- The body of rollouts.appended / steps.appended events: one row per step.
-- Embeddings and token log-probs are packed little-endian float32.
-- No foreign keys on this table, deliberately: it is the ingest hot path, the
-- only writer (the appender) inserts ids it resolved in the same transaction,
-- nothing referenced is ever deleted, and per-row FK checks cost about 40 % of
-- ingest throughput (docs/benchmarks.md).
CREATE TABLE steps (
  trajectory_id  bigint           NOT NULL, -- trajectories (id)
  idx            integer          NOT NULL,
  run_id         uuid             NOT NULL,
  seq            bigint           NOT NULL,
  state_id       bigint           NOT NULL, -- texts (id)
  action_id      bigint           NOT NULL, -- texts (id)
  reward         double precision NOT NULL,
  nll            double precision,
  token_logprobs bytea,
  embedding      bytea,
  value          double precision,
  next_state_id  bigint,           -- texts (id)
  next_value     double precision,
  extra          jsonb, -- fields beyond rollout-batch/v1, kept as sent
  PRIMARY KEY (trajectory_id, idx)
);

CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER steps_append_only BEFORE UPDATE OR DELETE ON steps
  FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER steps_no_truncate BEFORE TRUNCATE ON steps
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
