-- The iterations of a run by the log position of their estimator inputs (docs/architecture.md, "Who packs").
--
-- The packer looks, after every append to a run, for the run's complete iterations without a fresh packed row.
-- It used to ask about every iteration of the run each time, which made packing cost PostgreSQL more per
-- ingested step the longer the run: at 10M steps (6,730 iterations) ingest cost it 8.6 µs per step against
-- 5.3 µs at 1M (`npm run bench:ingest`). A pass now asks only about the iterations whose inputs changed since
-- its previous pass (`inputs_seq` above the position that pass saw) and those not complete then; this index
-- finds the first kind without reading the others.
CREATE INDEX iterations_by_inputs_seq ON iterations (run_id, inputs_seq);
