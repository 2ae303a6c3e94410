-- Diagnostics on demand (docs/architecture.md, "Jobs").
--
-- Before: every stored version carried its method's per-step diagnostics — for GiGPO five float32
-- values per step beside the one advantage, so a recompute job of 1M steps wrote 24 MB, of which
-- 20 MB were diagnostics that few ever read; storing them, not estimating, was what such a job
-- waited on. Now a recompute job stores advantages and the summary only (the three diagnostic columns
-- NULL), and the first read that asks for an iteration's diagnostics computes them again from the
-- same log position (the estimators are deterministic, so they are those the job would have stored)
-- and fills them in. Versions computed by a read keep storing their diagnostics as before.
ALTER TABLE advantage_set_iterations
  ALTER COLUMN diagnostic_names DROP NOT NULL,
  ALTER COLUMN diagnostic_kinds DROP NOT NULL,
  ALTER COLUMN diagnostics DROP NOT NULL,
  ADD CONSTRAINT advantage_set_iterations_diagnostics_whole
    CHECK ((diagnostics IS NULL) = (diagnostic_names IS NULL)
           AND (diagnostics IS NULL) = (diagnostic_kinds IS NULL));
