-- Advantage sets: projections of the step store under one estimator (docs/architecture.md,
-- "Counterfactual advantages"). Deterministic and rebuildable: dropping them loses nothing.

-- One set = (run, method, resolved parameters, estimator version).
CREATE TABLE advantage_sets (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id            uuid        NOT NULL REFERENCES runs (id),
  method            text        NOT NULL,
  params            jsonb       NOT NULL, -- every parameter after defaults, in registry order
  params_key        text        NOT NULL, -- canonical text of params: the cache key
  estimator_version text        NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, method, params_key, estimator_version)
);

-- One row per computed iteration, written in one statement: a reader sees an
-- iteration's advantages whole or not at all.
CREATE TABLE advantage_set_iterations (
  set_id      bigint      NOT NULL REFERENCES advantage_sets (id),
  iteration   integer     NOT NULL,
  step_count  integer     NOT NULL,
  advantages  bytea       NOT NULL, -- little-endian float32, canonical step order
  -- per-step diagnostics: diagnostic_names[i] (of kind diagnostic_kinds[i]) is the i-th block of
  -- step_count little-endian float32 values in `diagnostics` (NaN = null)
  diagnostic_names text[] NOT NULL,
  diagnostic_kinds text[] NOT NULL,
  diagnostics bytea       NOT NULL,
  summary     jsonb       NOT NULL,
  compute_ms  real        NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (set_id, iteration)
);

-- Recompute requests as users see them; the queue itself is pg-boss's (schema pgboss).
CREATE TABLE recompute_jobs (
  id          uuid        PRIMARY KEY,
  set_id      bigint      NOT NULL REFERENCES advantage_sets (id),
  run_id      uuid        NOT NULL REFERENCES runs (id),
  iterations  integer[]   NOT NULL,
  status      text        NOT NULL DEFAULT 'queued'
              CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  done        integer     NOT NULL DEFAULT 0,
  error       text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  started_at  timestamptz,
  finished_at timestamptz
);
CREATE INDEX recompute_jobs_run_idx ON recompute_jobs (run_id, created_at DESC);
