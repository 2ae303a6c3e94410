-- The last value each run logged of each metric, as W&B calls a run's summary: what the runs list
-- sorts by (`runs(sort: METRIC_DESC, sortMetric: …)`, docs/architecture.md).
--
-- Read from `iterations` instead, the order walked each run's iterations backwards to the last one holding
-- the metric: cheap for a metric every iteration logs, but a whole scan of every run's iterations for a
-- name no run logged (a typo: 0.4 s per million iteration rows, on every page). Here a run's value is one
-- primary-key lookup whatever the name. Held-out success is the row named evaluation.successRate, as in
-- metricSeries. A projection like `iterations`: written by the same appends, rebuilt from the log.
CREATE TABLE run_metrics (
  run_id    uuid             NOT NULL REFERENCES runs (id),
  name      text             NOT NULL,
  iteration integer          NOT NULL, -- the highest iteration that logged it
  value     double precision NOT NULL,
  PRIMARY KEY (run_id, name)
);

INSERT INTO run_metrics (run_id, name, iteration, value)
SELECT DISTINCT ON (i.run_id, m.key) i.run_id, m.key, i.iteration, (m.value #>> '{}')::double precision
FROM iterations i, jsonb_each(i.metrics) m
ORDER BY i.run_id, m.key, i.iteration DESC;

INSERT INTO run_metrics (run_id, name, iteration, value)
SELECT DISTINCT ON (run_id) run_id, 'evaluation.successRate', iteration, evaluation_success_rate
FROM iterations WHERE evaluation_success_rate IS NOT NULL
ORDER BY run_id, iteration DESC
ON CONFLICT (run_id, name) DO UPDATE SET iteration = EXCLUDED.iteration, value = EXCLUDED.value
  WHERE EXCLUDED.iteration >= run_metrics.iteration;
