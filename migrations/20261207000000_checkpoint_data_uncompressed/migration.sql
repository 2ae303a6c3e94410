-- Checkpoints are downloaded in chunks (substring of data), so that a download holds one chunk in
-- memory, not the checkpoint. PostgreSQL slices an uncompressed value by reading only the TOAST
-- chunks the slice covers, but decompresses a compressed one from its start for every slice: the
-- reads of one download grow with the square of its size (a 200 MiB checkpoint that compressed
-- 80-fold took 6.2 s to download, against 3.3 s stored uncompressed). Weights barely compress
-- anyway; small text checkpoints that do lose little. Rows stored before keep their form.
ALTER TABLE checkpoints ALTER COLUMN data SET STORAGE EXTERNAL;
