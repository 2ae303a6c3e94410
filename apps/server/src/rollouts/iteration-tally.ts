import type pg from 'pg';

/** The `iterations` projection of one iteration, as kept in memory while events are applied. */
export interface IterationRow {
  iteration: number;
  groupCount: number;
  trajectoryCount: number;
  stepCount: number;
  /** Seq of the last event that changed this iteration's steps or an outcome (estimator inputs). */
  inputsSeq: number | null;
  metrics: Record<string, number>;
  evaluationSuccessRate: number | null;
  lastSeq: number;
  dirty: boolean;
}

/**
 * The statement `save` writes with (exported for bench:ingest-database, which measures it alone):
 * the run id, then one array per column after it.
 */
export const UPSERT_ITERATIONS_SQL = `INSERT INTO iterations (run_id, iteration, group_count, trajectory_count, step_count, inputs_seq,
                         metrics, evaluation_success_rate, last_seq)
  SELECT $1, * FROM unnest($2::int[], $3::int[], $4::int[], $5::int[], $6::bigint[], $7::jsonb[],
                          $8::float8[], $9::bigint[])
  ON CONFLICT (run_id, iteration) DO UPDATE SET group_count = EXCLUDED.group_count,
    trajectory_count = EXCLUDED.trajectory_count, step_count = EXCLUDED.step_count,
    inputs_seq = EXCLUDED.inputs_seq, metrics = EXCLUDED.metrics,
    evaluation_success_rate = EXCLUDED.evaluation_success_rate, last_seq = EXCLUDED.last_seq`;

/**
 * The run's summary (`run_metrics`): a metric's row moves only to an iteration at or after its own,
 * so that a value logged late for an earlier iteration does not replace the newest one.
 */
const UPSERT_RUN_METRICS_SQL = `INSERT INTO run_metrics (run_id, name, iteration, value)
  SELECT $1, * FROM unnest($2::text[], $3::int[], $4::float8[])
  ON CONFLICT (run_id, name) DO UPDATE SET iteration = EXCLUDED.iteration, value = EXCLUDED.value
    WHERE EXCLUDED.iteration >= run_metrics.iteration`;

/** The name held-out success goes by among a run's metrics (as in metricSeries). */
export const EVALUATION_SUCCESS = 'evaluation.successRate';
/** The metric a trainer logs its training success under (the runs list's success column). */
export const TRAINING_SUCCESS = 'successRate';

/**
 * What each iteration holds and the log position its estimator inputs reflect, loaded when an
 * append first touches an iteration and written back with one statement per chunk; and the last
 * value of each metric logged, for the run's summary.
 */
export class IterationTally {
  private readonly rows = new Map<number, IterationRow>();
  /** Metrics logged since the last save: name → the latest iteration's value among them. */
  private readonly logged = new Map<string, { iteration: number; value: number }>();

  constructor(
    private readonly client: pg.PoolClient,
    private readonly runId: string,
    /** Iterations above this one have no row yet (nothing to load). */
    private readonly lastIterationStored: number | null,
  ) {}

  /**
   * Loads the rows of these iterations that are stored and not in memory yet. Returns those of them
   * that held no trajectories: all they will hold is this append's.
   */
  async touch(iterations: Iterable<number>): Promise<number[]> {
    const last = this.lastIterationStored;
    const wanted = [...new Set(iterations)].filter((i) => !this.rows.has(i));
    const stored = wanted.filter((i) => last !== null && i <= last);
    if (stored.length > 0) {
      const res = await this.client.query<{
        iteration: number;
        group_count: number;
        trajectory_count: number;
        step_count: number;
        inputs_seq: string | null;
        metrics: Record<string, number>;
        evaluation_success_rate: number | null;
        last_seq: string;
      }>(
        `SELECT iteration, group_count, trajectory_count, step_count, inputs_seq, metrics,
                evaluation_success_rate, last_seq
         FROM iterations WHERE run_id = $1 AND iteration = ANY($2::int[])`,
        [this.runId, stored],
      );
      for (const r of res.rows) {
        this.rows.set(r.iteration, {
          iteration: r.iteration,
          groupCount: r.group_count,
          trajectoryCount: r.trajectory_count,
          stepCount: r.step_count,
          inputsSeq: r.inputs_seq === null ? null : Number(r.inputs_seq),
          metrics: r.metrics,
          evaluationSuccessRate: r.evaluation_success_rate,
          lastSeq: Number(r.last_seq),
          dirty: false,
        });
      }
    }
    for (const i of wanted) {
      if (this.rows.has(i)) continue;
      this.rows.set(i, {
        iteration: i,
        groupCount: 0,
        trajectoryCount: 0,
        stepCount: 0,
        inputsSeq: null,
        metrics: {},
        evaluationSuccessRate: null,
        lastSeq: 0,
        dirty: true,
      });
    }
    return wanted.filter((i) => (this.rows.get(i) as IterationRow).trajectoryCount === 0);
  }

  /** The log position an iteration's estimator inputs reflect so far (null: none yet, or not touched). */
  inputsSeqOf(iteration: number): number | null {
    return this.rows.get(iteration)?.inputsSeq ?? null;
  }

  /** The row of an iteration touched before, marked to be written. */
  at(iteration: number): IterationRow {
    const row = this.rows.get(iteration);
    if (!row) throw new Error(`iteration ${iteration} was not touched`);
    row.dirty = true;
    return row;
  }

  /** A metric's value logged for an iteration (held-out success as evaluation.successRate). */
  noteMetric(name: string, iteration: number, value: number): void {
    const known = this.logged.get(name);
    if (!known || iteration >= known.iteration) this.logged.set(name, { iteration, value });
  }

  /**
   * Takes the iterations changed since the last call and the metrics logged since, as they are now:
   * the statements that store them (the run's summary, then the iterations), sent with the chunk's
   * others as one (one-statement.ts).
   */
  takeStatements(): pg.QueryConfig[] {
    const summary = this.summaryUpsert();
    const dirty = [...this.rows.values()].filter((r) => r.dirty);
    for (const r of dirty) r.dirty = false;
    const iterations: pg.QueryConfig | undefined =
      dirty.length === 0
        ? undefined
        : {
            text: UPSERT_ITERATIONS_SQL,
            values: [
              this.runId,
              dirty.map((r) => r.iteration),
              dirty.map((r) => r.groupCount),
              dirty.map((r) => r.trajectoryCount),
              dirty.map((r) => r.stepCount),
              dirty.map((r) => r.inputsSeq),
              dirty.map((r) => JSON.stringify(r.metrics)),
              dirty.map((r) => r.evaluationSuccessRate),
              dirty.map((r) => r.lastSeq),
            ],
          };
    return [summary, iterations].filter((q): q is pg.QueryConfig => q !== undefined);
  }

  private summaryUpsert(): pg.QueryConfig | undefined {
    if (this.logged.size === 0) return undefined;
    const entries = [...this.logged.entries()];
    this.logged.clear();
    return {
      text: UPSERT_RUN_METRICS_SQL,
      values: [
        this.runId,
        entries.map(([name]) => name),
        entries.map(([, v]) => v.iteration),
        entries.map(([, v]) => v.value),
      ],
    };
  }
}
