-- Packed iterations without their embeddings (apps/server/src/advantages/packed-columns.ts).
--
-- Before: every packed iteration held a third copy of each step's vector, after the event log's and
-- the step slices'. With 256-d embeddings that was about 1 kB more WAL and storage per step at ingest
-- (and 16 kB at 4096-d), for BiPACE alone, the one method that reads embeddings. It now reads them
-- from the step slices, as it does for iterations not packed; the other methods read packed rows as
-- before. The other columns keep their layout, so the rows packed until now stay valid (format 1).
-- Dropping a column rewrites nothing; the space its values held is reused as rows are rewritten.
ALTER TABLE iteration_columns DROP COLUMN embedding;
