import { isUuid } from '../database/uuid';
import {
  EstimatorInputError,
  getMethod,
  resolveParams,
  type ColumnarBatch,
} from '@creditlab/estimators';
import { Inject, Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { Metrics } from '../operations/metrics';
import { DomainError, ErrorCode, runNotFound } from '../errors/domain-error';
import { encodeDiagnostics, packFloat32Array } from './advantage-codec';
import {
  decodeStored,
  freshIteration,
  freshIterations,
  insertIterations,
  type DecodedIteration,
  type StoredIteration,
} from './advantage-store';
import { EstimatorPool } from './estimator-pool';
import {
  readIteration,
  readIterations,
  type IterationSnapshot,
  type TrajectoryShape,
} from './iteration-reader';

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

/**
 * An iteration's advantages under a set, computed from the iteration as it stood at log position
 * `inputsSeq` (the newest, when read), with the shape they are laid out in.
 */
export interface IterationAdvantages extends DecodedIteration {
  shape: TrajectoryShape[];
  /** false when this call computed it, true when a fresh version was stored already. */
  reused: boolean;
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

  /**
   * The iteration's advantages under `set`, always those the estimator gives on the iteration as it
   * stands: a stored version is used only if it was computed from the current log position (late
   * steps, trajectories or outcomes make it stale); otherwise the iteration is read, estimated, and
   * the new version stored (if the set is stored). Advantages and shape come from one snapshot.
   */
  async iteration(
    set: AdvantageSet,
    iteration: number,
    withDiagnostics = true,
  ): Promise<IterationAdvantages> {
    if (set.id !== null) {
      const fresh = await freshIteration(
        this.db.pool,
        set.runId,
        set.id,
        iteration,
        withDiagnostics,
      );
      if (fresh) {
        const now = await readIteration(this.db.pool, set.runId, iteration, { steps: false });
        // Unless steps arrived in between: then compute from the newer snapshot below.
        if (now?.inputsSeq === fresh.inputsSeq) return { ...fresh, shape: now.shape, reused: true };
      }
    }
    const snapshot = await readIteration(this.db.pool, set.runId, iteration);
    if (!snapshot?.batch) throw noRollouts(set.runId, iteration);
    const row = await this.estimateRow(set, snapshot);
    if (set.id !== null) await insertIterations(this.db.pool, set.id, [row]);
    return { ...decodeStored(row), shape: snapshot.shape, reused: false };
  }

  /**
   * Every set's advantages of one iteration, all computed from the same version of it: if steps or
   * outcomes arrive while they are read, they are read again (a few times at most).
   */
  async sameVersion(sets: AdvantageSet[], iteration: number): Promise<IterationAdvantages[]> {
    for (let attempt = 0; ; attempt++) {
      const versions: IterationAdvantages[] = [];
      for (const set of sets) versions.push(await this.iteration(set, iteration, false));
      const seqs = new Set(versions.map((v) => v.inputsSeq));
      if (seqs.size === 1) return versions;
      if (attempt === 4)
        throw new DomainError(
          ErrorCode.Conflict,
          `iteration ${iteration} kept changing while it was read; try again`,
          { iteration },
        );
    }
  }

  /**
   * The bulk path for recompute jobs, in two halves so a job can read the next chunk while it
   * estimates and stores this one: `loadMany` reads several iterations in one snapshot (texts
   * cached across calls), `computeLoaded` estimates them on the worker threads in parallel and
   * stores them with one statement, each stamped with the log position it was read at.
   */
  loadMany(
    set: AdvantageSet,
    iterations: number[],
    texts?: Map<string, string>,
  ): Promise<Map<number, IterationSnapshot>> {
    return readIterations(this.db.pool, set.runId, iterations, { steps: true, texts });
  }

  async computeLoaded(
    set: StoredSet,
    iterations: number[],
    snapshots: Map<number, IterationSnapshot>,
  ): Promise<void> {
    const results = await Promise.allSettled(
      iterations.map((i) => {
        const snapshot = snapshots.get(i);
        if (!snapshot?.batch) return Promise.reject(noRollouts(set.runId, i));
        return this.estimateRow(set, snapshot);
      }),
    );
    // The first failure in iteration order, whichever thread finished first: the same input, the same message.
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await insertIterations(
      this.db.pool,
      set.id,
      results.map((r) => (r as PromiseFulfilledResult<StoredIteration>).value),
    );
  }

  /** The iterations of a set whose stored version is fresh (computed from their current log position). */
  freshIterations(set: StoredSet, iterations?: number[]): Promise<number[]> {
    return freshIterations(this.db.pool, set.runId, set.id, iterations);
  }

  private async estimateRow(
    set: AdvantageSet,
    snapshot: IterationSnapshot,
  ): Promise<StoredIteration> {
    const batch = snapshot.batch as ColumnarBatch;
    let out;
    try {
      out = await this.estimators.run(batch, set.method, set.params);
    } catch (e) {
      if (e instanceof EstimatorInputError) {
        throw new DomainError(
          ErrorCode.InvalidInput,
          `${set.method} on run ${set.runId} iteration ${snapshot.iteration}: ${e.message}`,
          { iteration: snapshot.iteration, estimatorError: e.code },
        );
      }
      throw e;
    }
    this.metrics.estimatorSeconds.observe({ method: set.method }, out.ms / 1000);
    const kinds = new Map(getMethod(set.method).diagnostics.map((d) => [d.name, d.kind]));
    return {
      iteration: snapshot.iteration,
      inputsSeq: snapshot.inputsSeq,
      stepCount: batch.stepCount,
      advantages: packFloat32Array(out.result.advantages),
      diagnostics: encodeDiagnostics(out.result.diagnostics, kinds, batch.stepCount),
      summary: out.result.summary,
      computeMs: out.ms,
    };
  }

  /** Iterations that hold rollouts, and which of them are complete (a later iteration exists, or the run ended). */
  async iterationsOf(runId: string): Promise<{ all: number[]; complete: number[] }> {
    const res = await this.db.pool.query<{ iteration: number; complete: boolean }>(
      `SELECT it.iteration, (r.status <> 'running' OR it.iteration < r.last_iteration) AS complete
       FROM iterations it JOIN runs r ON r.id = it.run_id
       WHERE it.run_id = $1 AND it.step_count > 0 ORDER BY it.iteration`,
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
       FROM advantage_sets s
       LEFT JOIN (advantage_set_iterations i JOIN iterations it
                  ON it.run_id = $1 AND it.iteration = i.iteration AND it.inputs_seq = i.inputs_seq)
         ON i.set_id = s.id
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
