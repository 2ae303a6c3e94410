-- Steps stored one row per slice (docs/architecture.md, "Projections"): the steps one event gave one
-- trajectory, each field an array with one element per step, instead of one row per step.
--
-- Why: replayed alone (`npm run bench:ingest-database`), the COPY of one row per step with its primary key
-- cost PostgreSQL 3.0 µs per ingested step, half of all its work for an ingested step and more than a
-- plain COPY of the same logical rows into a table without any index. One row per slice (about 12
-- steps here) pays the row's header, the primary key entry and the per-row COPY work once per slice:
-- the same steps cost 0.8 µs. Readers see the steps as before through the `steps` view, which
-- unnests the slices; an iteration in canonical order is still one range of a primary key.
--
-- The rows are a projection: the old table is dropped and PROJECTION_VERSION 2 makes the server (or
-- `npm run db:migrate`) rebuild every run's projections from the event log right after this migration.
DROP TABLE steps;

CREATE TABLE step_slices (
  run_id         uuid    NOT NULL,
  iteration      integer NOT NULL,
  group_ord      integer NOT NULL,
  traj_ord       integer NOT NULL,
  first_idx      integer NOT NULL, -- the trajectory's index of the slice's first step
  seq            bigint  NOT NULL, -- the event that carried the slice
  step_count     integer NOT NULL,
  -- One element per step. Optional fields are NULL as a whole when no step of the slice has them.
  state_id       bigint[]           NOT NULL, -- texts (run_id, id)
  action_id      bigint[]           NOT NULL,
  reward         double precision[] NOT NULL,
  nll            double precision[],
  token_logprobs bytea[],            -- little-endian float32
  embedding      bytea[],            -- little-endian float32
  value          double precision[],
  next_state_id  bigint[],
  next_value     double precision[],
  extra          jsonb[],            -- fields beyond rollout-batch/v1, as sent
  PRIMARY KEY (run_id, iteration, group_ord, traj_ord, first_idx)
) WITH (toast_tuple_target = 8160); -- slices stay inline (uncompressed) up to 8 kB

-- Vectors are float32 noise to a compressor: store large ones out of line as they are, not through pglz
-- (with 256-d embeddings, compressing them made a slice cost more than the per-step rows it replaced).
ALTER TABLE step_slices
  ALTER COLUMN token_logprobs SET STORAGE EXTERNAL,
  ALTER COLUMN embedding SET STORAGE EXTERNAL;

CREATE TRIGGER step_slices_append_only BEFORE UPDATE OR DELETE ON step_slices
  FOR EACH ROW EXECUTE FUNCTION refuse_projection_change();
CREATE TRIGGER step_slices_no_truncate BEFORE TRUNCATE ON step_slices
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_projection_change();

-- The steps, one row each, as the table had them. Filters on the key columns but idx reach the primary key.
CREATE VIEW steps AS
SELECT s.run_id, s.iteration, s.group_ord, s.traj_ord, s.first_idx + (u.k - 1)::integer AS idx, s.seq,
       u.state_id, u.action_id, u.reward, u.nll, u.token_logprobs, u.embedding, u.value,
       u.next_state_id, u.next_value, u.extra
FROM step_slices s
CROSS JOIN LATERAL unnest(s.state_id, s.action_id, s.reward, s.nll, s.token_logprobs, s.embedding,
                          s.value, s.next_state_id, s.next_value, s.extra)
  WITH ORDINALITY AS u(state_id, action_id, reward, nll, token_logprobs, embedding, value,
                       next_state_id, next_value, extra, k);

-- Runs stored so far carry projection version 1 and are rebuilt; runs created from now on start at 2.
ALTER TABLE runs ALTER COLUMN projection_version SET DEFAULT 2;
