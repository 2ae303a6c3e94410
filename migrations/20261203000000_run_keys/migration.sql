-- Every per-run key includes the run id (docs/scaling.md, "Citus"; test/schema-keys.int.spec.ts), so
-- that with run_id as the distribution column a run's advantage sets, their iterations and its jobs
-- sit on the run's shard and every join between them stays there.
--
-- Before: advantage_sets was keyed by its surrogate id alone, advantage_set_iterations had no run id,
-- and recompute_jobs was keyed by its job id alone.

ALTER TABLE advantage_set_iterations DROP CONSTRAINT advantage_set_iterations_set_id_fkey;
ALTER TABLE recompute_jobs DROP CONSTRAINT recompute_jobs_set_id_fkey;

-- Ids stay numbered by the identity: unique in practice, keyed together with the run.
ALTER TABLE advantage_sets DROP CONSTRAINT advantage_sets_pkey;
ALTER TABLE advantage_sets ADD PRIMARY KEY (run_id, id);

ALTER TABLE advantage_set_iterations ADD COLUMN run_id uuid;
UPDATE advantage_set_iterations a SET run_id = s.run_id FROM advantage_sets s WHERE s.id = a.set_id;
ALTER TABLE advantage_set_iterations ALTER COLUMN run_id SET NOT NULL;
ALTER TABLE advantage_set_iterations DROP CONSTRAINT advantage_set_iterations_pkey;
ALTER TABLE advantage_set_iterations ADD PRIMARY KEY (run_id, set_id, iteration, inputs_seq);
ALTER TABLE advantage_set_iterations
  ADD FOREIGN KEY (run_id, set_id) REFERENCES advantage_sets (run_id, id);

-- A job is still addressed by its id alone (GraphQL `job(id)`, `cancelJob`): a plain index finds it.
ALTER TABLE recompute_jobs DROP CONSTRAINT recompute_jobs_pkey;
ALTER TABLE recompute_jobs ADD PRIMARY KEY (run_id, id);
CREATE INDEX recompute_jobs_id_idx ON recompute_jobs (id);
ALTER TABLE recompute_jobs ADD FOREIGN KEY (run_id, set_id) REFERENCES advantage_sets (run_id, id);
