-- Checkpoints may keep their bytes in an S3-compatible bucket (CREDITLAB_CHECKPOINT_BUCKET; docs/scaling.md,
-- "Checkpoints in object storage") rather than in checkpoint_parts. The row says which: object_url is the
-- object's s3://bucket/key, or null for parts in this database, so that checkpoints stored before a bucket was
-- set (or after it is unset) stay readable beside those in it. The row, its event and everything else stay here.
ALTER TABLE checkpoints ADD COLUMN object_url text CHECK (object_url ~ '^s3://[^/]+/.+');
-- A bucket takes checkpoints past 2 GiB (an integer's limit); the database's parts stay at 1 GiB at most.
ALTER TABLE checkpoints ALTER COLUMN size_bytes TYPE bigint;
