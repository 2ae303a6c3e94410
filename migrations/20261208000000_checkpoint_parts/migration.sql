-- A checkpoint's bytes are stored as parts of 1 MiB, written as the upload arrives (docs/architecture.md,
-- "Checkpoints"). Held as one bytea value, an upload had to be kept whole in the server's memory (twice over
-- while PostgreSQL received it) until its transaction; four 200 MiB uploads took about 2.4 GiB, and a process
-- budget for that memory let one key's slow uploads refuse everyone else's. Parts are written by an upload
-- before its checkpoint row exists, each on its own (no transaction is held while a client sends), under an
-- upload id; the checkpoint row names the upload whose parts are its bytes, in one transaction with its
-- checkpoint.saved event. Parts of an upload that never got its row (refused, abandoned, the server killed)
-- are deleted by the upload itself, or by the server's sweep once they are older than any upload can last.
CREATE TABLE checkpoint_parts (
  run_id     uuid        NOT NULL REFERENCES runs (id),
  upload_id  uuid        NOT NULL,
  ord        integer     NOT NULL CHECK (ord >= 0),
  data       bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, upload_id, ord)
);
-- Parts are read whole, one per read of a download; weights barely compress (see
-- 20261207000000_checkpoint_data_uncompressed), and compressing costs the upload's time.
ALTER TABLE checkpoint_parts ALTER COLUMN data SET STORAGE EXTERNAL;
-- The sweep of abandoned uploads looks for old parts.
CREATE INDEX checkpoint_parts_created_at ON checkpoint_parts (created_at);

ALTER TABLE checkpoints ADD COLUMN upload_id uuid;

-- Checkpoints stored before: their bytes are cut into parts, one checkpoint at a time (the variable holds
-- one checkpoint's bytes, decompressed once, rather than each part decompressing the value from its start).
DO $$
DECLARE
  c record;
  bytes bytea;
  upload uuid;
  part_bytes constant integer := 1048576;
BEGIN
  FOR c IN SELECT run_id, iteration FROM checkpoints ORDER BY run_id, iteration LOOP
    SELECT data INTO bytes FROM checkpoints WHERE run_id = c.run_id AND iteration = c.iteration;
    upload := gen_random_uuid();
    INSERT INTO checkpoint_parts (run_id, upload_id, ord, data)
    SELECT c.run_id, upload, p.ord, substring(bytes FROM p.ord * part_bytes + 1 FOR part_bytes)
    FROM generate_series(0, (length(bytes) - 1) / part_bytes) AS p (ord);
    UPDATE checkpoints SET upload_id = upload WHERE run_id = c.run_id AND iteration = c.iteration;
  END LOOP;
END $$;

-- Emptied before it is dropped, so that vacuum frees the old values' storage (a dropped column's values
-- stay on disk until the table is rewritten).
ALTER TABLE checkpoints ALTER COLUMN data DROP NOT NULL;
UPDATE checkpoints SET data = NULL;
ALTER TABLE checkpoints DROP COLUMN data;
ALTER TABLE checkpoints ALTER COLUMN upload_id SET NOT NULL;
