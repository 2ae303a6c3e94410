-- Checkpoints may keep their bytes in an S3-compatible bucket (CREDITLAB_CHECKPOINT_BUCKET; docs/scaling.md,
-- "Checkpoints in object storage") rather than in checkpoint_parts. The row says which: object_url is the
-- object's s3://bucket/key, or null for parts in this database, so that checkpoints stored before a bucket was
-- set (or after it is unset) stay readable beside those in it. The row, its event and everything else stay here.
ALTER TABLE checkpoints ADD COLUMN object_url text CHECK (object_url ~ '^s3://[^/]+/.+');
-- A bucket takes checkpoints past 2 GiB (an integer's limit); the database's parts stay at 1 GiB at most.
ALTER TABLE checkpoints ALTER COLUMN size_bytes TYPE bigint;

-- Uploads into the bucket in progress, from their first request to the store until their checkpoint row is
-- written (in the same transaction as this row's delete) or their bytes are removed. A row left behind is an
-- upload the server did not finish; the sweep removes its object (and aborts its multipart upload, whose id it
-- keeps) from this record alone, never from a listing of the bucket, which may hold another deployment's
-- checkpoints under the same prefix.
CREATE TABLE checkpoint_bucket_uploads (
  run_id              uuid        NOT NULL REFERENCES runs (id),
  upload_id           uuid        NOT NULL,
  object_url          text        NOT NULL,
  multipart_upload_id text,
  started_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, upload_id)
);
CREATE INDEX checkpoint_bucket_uploads_started_at ON checkpoint_bucket_uploads (started_at);
