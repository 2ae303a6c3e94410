-- Trajectories without foreign keys, as steps already are (docs/architecture.md, "Projections").
--
-- Before: each trajectory row written at ingest was checked against its run and its task group by two
-- foreign-key triggers. Replayed alone (`npm run bench:ingest-database`), the trajectories upsert cost
-- 1.87 µs of database CPU per ingested step with the keys and 0.69 µs without them: more than a
-- sixth of all the database's work for an ingested step, to check what the one writer has just
-- written itself. Trajectories are a projection: RunProjector writes a trajectory's group in the same
-- transaction before the trajectory, and a rebuild writes both again from the log by the same code,
-- so the references hold by construction (test/rebuild.e2e.spec.ts compares a rebuild with ingest).
ALTER TABLE trajectories
  DROP CONSTRAINT IF EXISTS trajectories_run_id_fkey,
  DROP CONSTRAINT IF EXISTS trajectories_run_id_iteration_group_ord_fkey;
