-- Stored advantages and diagnostics uncompressed (docs/benchmarks.md, "Recompute, online path and compare").
--
-- Before: both bytea columns had the default storage, so PostgreSQL compressed every value over 2 kB
-- with pglz as it was written. For a recompute job that was the largest part of storing a chunk of 16
-- iterations (about 30 ms of 35 ms for GiGPO's 1.5k-step iterations on the benchmark machine), more than
-- estimating them. Now they are stored as they are: about 5× faster to write, and read without
-- decompressing, at the price of more disk for diagnostics that compress well (GiGPO's: about 2×).
-- Rows written before keep their compressed values; both read the same.
ALTER TABLE advantage_set_iterations
  ALTER COLUMN advantages SET STORAGE EXTERNAL,
  ALTER COLUMN diagnostics SET STORAGE EXTERNAL;
