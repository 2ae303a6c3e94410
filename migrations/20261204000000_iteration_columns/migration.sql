-- Packed per-iteration columns (docs/architecture.md, "The read path at memory speed").
--
-- Before: every read of an iteration for an estimator went through the steps table, one row per
-- step (an index scan, the trajectories joined for the shape). Now an iteration, once complete, is
-- also kept as one row holding its estimator inputs column by column, so that recompute reads one
-- row per iteration. It is a cache derived from the projections, not a projection of its own:
--   * `inputs_seq` is the iteration's log position the columns reflect; a row whose inputs_seq differs
--     from iterations.inputs_seq (late steps or outcomes arrived) is never served, and is rewritten;
--   * `format` is the encoding (apps/server/src/advantages/packed-columns.ts); a row of another
--     format is ignored and rewritten;
--   * a rebuild of a run deletes its rows; dropping them all loses nothing but speed.
-- Numbers are packed little-endian; the layout of each column is described in packed-columns.ts.
CREATE TABLE iteration_columns (
  run_id     uuid     NOT NULL,
  iteration  integer  NOT NULL,
  inputs_seq bigint   NOT NULL,
  format     smallint NOT NULL,
  shape      jsonb    NOT NULL, -- [[group key, trajectory key, group ord, ord, outcome, steps], ...]
  reward     bytea    NOT NULL,
  states     bytea    NOT NULL,
  actions    bytea    NOT NULL,
  nll        bytea    NOT NULL,
  value      bytea    NOT NULL,
  embedding  bytea    NOT NULL,
  bootstrap  bytea    NOT NULL,
  PRIMARY KEY (run_id, iteration),
  -- The iteration implies its run. No key to runs itself: checking one share-locks the run's row,
  -- which every append locks FOR UPDATE, so packing and the trainer's appends would wait on each other.
  FOREIGN KEY (run_id, iteration) REFERENCES iterations (run_id, iteration)
);

-- Numbers hardly compress, and decompressing would cost every read: stored as they are.
ALTER TABLE iteration_columns
  ALTER COLUMN reward SET STORAGE EXTERNAL,
  ALTER COLUMN states SET STORAGE EXTERNAL,
  ALTER COLUMN actions SET STORAGE EXTERNAL,
  ALTER COLUMN nll SET STORAGE EXTERNAL,
  ALTER COLUMN value SET STORAGE EXTERNAL,
  ALTER COLUMN embedding SET STORAGE EXTERNAL,
  ALTER COLUMN bootstrap SET STORAGE EXTERNAL;
