import { isUuid } from '../database/uuid';
import {
  EstimatorInputError,
  getMethod,
  resolveParams,
  type ColumnarBatch,
  type DiagnosticKind,
} from '@creditlab/estimators';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { Metrics } from '../metrics/metrics';
import { DomainError, ErrorCode, runNotFound } from '../errors/domain-error';
import {
  decodeDiagnostics,
  encodeDiagnostics,
  packFloat32Array,
  unpackFloat32Array,
  type Diagnostics,
  type StoredDiagnostics,
} from './advantage-codec';
import { EstimatorPool } from './estimator-pool';
import { loadIterationBatch, loadIterationBatches } from './iteration-batch-loader';

export interface MethodRequest {
  name: string;
  params?: Record<string, unknown>;
}

/** (run, method, resolved params, estimator version): the identity of an advantage set. */
export interface AdvantageSet {
  /** null: computed for one request and not stored (see `SetStorage`). */
  id: string | null;
  runId: string;
  method: string;
  params: Record<string, unknown>;
  version: string;
}

export interface IterationAdvantages {
  iteration: number;
  stepCount: number;
  advantages: Float32Array;
  diagnostics: Diagnostics;
  summary: Record<string, unknown>;
  computeMs: number;
  /** false when this call computed it, true when it was already stored. */
  reused: boolean;
}

interface StoredRow {
  iteration: number;
  stepCount: number;
  advantages: Buffer;
  diagnostics: StoredDiagnostics;
  summary: Record<string, unknown>;
  computeMs: number;
}

/**
 * What a request may store. Keys that may write store every set they compute. A read key stores
 * only a method at its default parameters (at most one set per method and run: bounded); other
 * parameters are computed for its request and not kept, unless a writer stored that set already.
 */
/** A set that has its row in advantage_sets. */
export type StoredSet = AdvantageSet & { id: string };

export type SetStorage = 'any' | 'defaults-only';

function noRollouts(runId: string, iteration: number): DomainError {
  return new DomainError(
    ErrorCode.InvalidInput,
    `run ${runId} has no rollouts in iteration ${iteration}`,
    { iteration },
  );
}

/**
 * Advantage sets: any method with any parameters on a run's stored rollouts,
 * computed once per (set, iteration) and kept. They are projections: the same
 * request always yields the same numbers, and stored ones are reused.
 */
@Injectable()
export class AdvantageSetsService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(EstimatorPool) private readonly estimators: EstimatorPool,
    @Inject(Metrics) private readonly metrics: Metrics,
  ) {}

  /** Validates the method and resolves its parameters (defaults applied): explicit defaults give the same set. */
  resolve(request: MethodRequest): {
    method: string;
    params: Record<string, unknown>;
    version: string;
  } {
    try {
      const method = getMethod(request.name);
      return {
        method: method.name,
        params: { ...resolveParams(method.name, method.params, request.params ?? {}) },
        version: method.version,
      };
    } catch (e) {
      if (e instanceof EstimatorInputError)
        throw new DomainError(ErrorCode.InvalidInput, e.message, { estimatorError: e.code });
      throw e;
    }
  }

  /**
   * The set a request names, stored if `storage` allows it (or if it exists already); else an
   * unstored set (id null) whose iterations are computed for the request only.
   */
  async openSet(runId: string, request: MethodRequest, storage: SetStorage): Promise<AdvantageSet> {
    const r = this.resolve(request);
    if (storage === 'any' || isDefault(r.method, r.params)) return this.ensureSet(runId, request);
    if (!isUuid(runId)) throw runNotFound(runId);
    const res = await this.db.pool.query<{ id: string }>(
      `SELECT id FROM advantage_sets WHERE run_id = $1 AND method = $2 AND params_key = $3 AND estimator_version = $4`,
      [runId, r.method, JSON.stringify(r.params), r.version],
    );
    return { id: res.rows[0]?.id ?? null, runId, ...r };
  }

  async ensureSet(runId: string, request: MethodRequest): Promise<StoredSet> {
    const r = this.resolve(request);
    if (!isUuid(runId)) throw runNotFound(runId);
    const key = JSON.stringify(r.params);
    // The foreign key on run_id tells an unknown run apart: no separate lookup on this hot path.
    const res = await this.db.pool
      .query<{ id: string }>(
        `WITH ins AS (
         INSERT INTO advantage_sets (run_id, method, params, params_key, estimator_version) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (run_id, method, params_key, estimator_version) DO NOTHING RETURNING id)
       SELECT id FROM ins UNION ALL
       SELECT id FROM advantage_sets WHERE run_id = $1 AND method = $2 AND params_key = $4 AND estimator_version = $5`,
        [runId, r.method, JSON.stringify(r.params), key, r.version],
      )
      .catch((e: { code?: string }) => {
        throw e.code === '23503' ? runNotFound(runId) : e;
      });
    return {
      id: (res.rows[0] as { id: string }).id,
      runId,
      method: r.method,
      params: r.params,
      version: r.version,
    };
  }

  /** The iteration's advantages under `set`: from the store, or computed now and stored. */
  async iteration(
    set: AdvantageSet,
    iteration: number,
    withDiagnostics = true,
  ): Promise<IterationAdvantages> {
    return (
      (set.id === null ? null : await this.stored(set.id, iteration, withDiagnostics)) ??
      (await this.compute(set, iteration))
    );
  }

  async stored(
    setId: string,
    iteration: number,
    withDiagnostics = true,
  ): Promise<IterationAdvantages | null> {
    const res = await this.db.pool.query<{
      step_count: number;
      advantages: Buffer;
      names: string[];
      kinds: DiagnosticKind[];
      diagnostics: Buffer;
      summary: Record<string, unknown>;
      compute_ms: number;
    }>(
      `SELECT step_count, advantages, diagnostic_names AS names, diagnostic_kinds AS kinds,
              ${withDiagnostics ? 'diagnostics' : `''::bytea AS diagnostics`}, summary, compute_ms
       FROM advantage_set_iterations WHERE set_id = $1 AND iteration = $2`,
      [setId, iteration],
    );
    const row = res.rows[0];
    if (!row) return null;
    return {
      iteration,
      stepCount: row.step_count,
      advantages: unpackFloat32Array(row.advantages),
      diagnostics: withDiagnostics
        ? decodeDiagnostics(
            { names: row.names, kinds: row.kinds, values: row.diagnostics },
            row.step_count,
          )
        : {},
      summary: row.summary,
      computeMs: row.compute_ms,
      reused: true,
    };
  }

  /** Reads the iteration's steps as a columnar batch, estimates in a worker thread, stores the result in one statement. */
  async compute(set: AdvantageSet, iteration: number): Promise<IterationAdvantages> {
    const batch = await loadIterationBatch(this.db.pool, set.runId, iteration);
    if (!batch) throw noRollouts(set.runId, iteration);
    const row = await this.estimateRow(set, iteration, batch);
    const inserted = set.id === null ? 1 : await this.insertRows(set.id, [row]);
    if (inserted === 0 && set.id !== null) {
      // Another process stored it first: what is stored is what everyone reads.
      return { ...((await this.stored(set.id, iteration)) as IterationAdvantages), reused: false };
    }
    return {
      iteration,
      stepCount: row.stepCount,
      advantages: unpackFloat32Array(row.advantages),
      diagnostics: decodeDiagnostics(row.diagnostics, row.stepCount),
      summary: row.summary,
      computeMs: row.computeMs,
      reused: false,
    };
  }

  /**
   * The bulk path for recompute jobs, in two halves so a job can read the next chunk while it
   * estimates and stores this one: `loadMany` reads several iterations with one statement (texts
   * cached across calls), `computeLoaded` estimates them on the worker threads in parallel and
   * stores them with one statement.
   */
  loadMany(
    set: AdvantageSet,
    iterations: number[],
    texts?: Map<string, string>,
  ): Promise<Map<number, ColumnarBatch>> {
    return loadIterationBatches(this.db.pool, set.runId, iterations, texts);
  }

  async computeLoaded(
    set: AdvantageSet,
    iterations: number[],
    batches: Map<number, ColumnarBatch>,
  ): Promise<void> {
    const results = await Promise.allSettled(
      iterations.map((i) => {
        const batch = batches.get(i);
        if (!batch) return Promise.reject(noRollouts(set.runId, i));
        return this.estimateRow(set, i, batch);
      }),
    );
    // The first failure in iteration order, whichever thread finished first: the same input, the same message.
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    if (set.id === null) throw new Error('recompute jobs work on stored sets');
    await this.insertRows(
      set.id,
      results.map((r) => (r as PromiseFulfilledResult<StoredRow>).value),
    );
  }

  private async estimateRow(
    set: AdvantageSet,
    iteration: number,
    batch: ColumnarBatch,
  ): Promise<StoredRow> {
    let out;
    try {
      out = await this.estimators.run(batch, set.method, set.params);
    } catch (e) {
      if (e instanceof EstimatorInputError) {
        throw new DomainError(
          ErrorCode.InvalidInput,
          `${set.method} on run ${set.runId} iteration ${iteration}: ${e.message}`,
          { iteration, estimatorError: e.code },
        );
      }
      throw e;
    }
    this.metrics.estimatorSeconds.observe({ method: set.method }, out.ms / 1000);
    const kinds = new Map(getMethod(set.method).diagnostics.map((d) => [d.name, d.kind]));
    return {
      iteration,
      stepCount: batch.stepCount,
      advantages: packFloat32Array(out.result.advantages),
      diagnostics: encodeDiagnostics(out.result.diagnostics, kinds, batch.stepCount),
      summary: out.result.summary,
      computeMs: out.ms,
    };
  }

  /** One statement for any number of iterations; returns how many were new. */
  private async insertRows(setId: string, rows: StoredRow[]): Promise<number> {
    const res = await this.db.pool.query(
      `INSERT INTO advantage_set_iterations
         (set_id, iteration, step_count, advantages, diagnostic_names, diagnostic_kinds, diagnostics, summary, compute_ms)
       SELECT $1, u.iteration, u.step_count, u.advantages, string_to_array(u.names, ','), string_to_array(u.kinds, ','),
              u.diagnostics, u.summary, u.compute_ms
       FROM unnest($2::int[], $3::int[], $4::bytea[], $5::text[], $6::text[], $7::bytea[], $8::jsonb[], $9::real[])
         AS u(iteration, step_count, advantages, names, kinds, diagnostics, summary, compute_ms)
       ON CONFLICT (set_id, iteration) DO NOTHING`,
      [
        setId,
        rows.map((r) => r.iteration),
        rows.map((r) => r.stepCount),
        rows.map((r) => r.advantages),
        rows.map((r) => r.diagnostics.names.join(',')),
        rows.map((r) => r.diagnostics.kinds.join(',')),
        rows.map((r) => r.diagnostics.values),
        rows.map((r) => JSON.stringify(r.summary)),
        rows.map((r) => r.computeMs),
      ],
    );
    return res.rowCount ?? 0;
  }

  async storedIterations(setId: string): Promise<number[]> {
    const res = await this.db.pool.query<{ iteration: number }>(
      'SELECT iteration FROM advantage_set_iterations WHERE set_id = $1',
      [setId],
    );
    return res.rows.map((r) => r.iteration);
  }

  /** Iterations that hold rollouts, and which of them are complete (a later iteration exists, or the run ended). */
  async iterationsOf(runId: string): Promise<{ all: number[]; complete: number[] }> {
    const res = await this.db.pool.query<{ iteration: number; complete: boolean }>(
      `SELECT DISTINCT t.iteration, (r.status <> 'running' OR t.iteration < r.last_iteration) AS complete
       FROM trajectories t JOIN runs r ON r.id = t.run_id WHERE t.run_id = $1 ORDER BY t.iteration`,
      [runId],
    );
    return {
      all: res.rows.map((r) => r.iteration),
      complete: res.rows.filter((r) => r.complete).map((r) => r.iteration),
    };
  }

  async setsOf(
    runId: string,
  ): Promise<(StoredSet & { iterations: number[]; stepCount: number; createdAt: Date })[]> {
    const res = await this.db.pool.query<{
      id: string;
      method: string;
      params_key: string;
      estimator_version: string;
      created_at: Date;
      iterations: number[] | null;
      steps: string | null;
    }>(
      `SELECT s.id, s.method, s.params_key, s.estimator_version, s.created_at,
              array_agg(i.iteration ORDER BY i.iteration) FILTER (WHERE i.iteration IS NOT NULL) AS iterations,
              sum(i.step_count) AS steps
       FROM advantage_sets s LEFT JOIN advantage_set_iterations i ON i.set_id = s.id
       WHERE s.run_id = $1 GROUP BY s.id ORDER BY s.id`,
      [runId],
    );
    return res.rows.map((r) => ({
      id: r.id,
      runId,
      method: r.method,
      params: JSON.parse(r.params_key) as Record<string, unknown>,
      version: r.estimator_version,
      iterations: r.iterations ?? [],
      stepCount: Number(r.steps ?? 0),
      createdAt: r.created_at,
    }));
  }
}

/** Whether every parameter is at the method's default (the set a bare `{name}` request names). */
function isDefault(method: string, params: Record<string, unknown>): boolean {
  const defaults = resolveParams(method, getMethod(method).params, {});
  return JSON.stringify(defaults) === JSON.stringify(params);
}
