-- Policy checkpoints uploaded by trainers (docs/architecture.md, "Checkpoints"). Checkpoint k holds the
-- weights after k iterations of training: the weights iteration k samples with. A checkpoint is
-- immutable: the same bytes again are acknowledged, different bytes for the same (run, k) refused.
-- Stored in the database because the trainer's policies are small (a few hundred KB); LLM-sized
-- checkpoints belong in object storage, with this table keeping their address and digest.
CREATE TABLE checkpoints (
  run_id     uuid        NOT NULL REFERENCES runs (id),
  iteration  integer     NOT NULL CHECK (iteration >= 0),
  format     text        NOT NULL,
  sha256     bytea       NOT NULL,
  size_bytes integer     NOT NULL,
  data       bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, iteration)
);
