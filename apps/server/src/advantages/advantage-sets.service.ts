import { isUuid } from '../database/uuid';
import {
  EstimatorInputError,
  getMethod,
  methodInputs,
  resolveParams,
  type ColumnarBatch,
} from '@creditlab/estimators';
import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import { Database } from '../database/database';
import { Metrics } from '../operations/metrics';
import { DomainError, ErrorCode, runNotFound } from '../errors/domain-error';
import {
  decodeFresh,
  decodeStored,
  freshIterations,
  freshIterationSql,
  insertIterations,
  insertRecomputed,
  type DecodedIteration,
  type FreshRow,
  type StoredIteration,
} from './advantage-store';
import type { PackedEstimate } from './estimate-worker';
import { EstimatorPool } from './estimator-pool';
import { IterationPacker } from './iteration-packer.service';
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
  /**
   * null: no row yet. A storable set gets its row once its first iteration is computed (`keep`),
   * so that a request that fails (a method whose input the run lacks) leaves no empty set behind;
   * any other is computed for one request and not stored (see `SetStorage`).
   */
  id: string | null;
  /** Whether this request may store the set (see `SetStorage`). */
  storable?: boolean;
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
    @Inject(IterationPacker) private readonly packer: IterationPacker,
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
   * The set a request names: its stored row if there is one; else, if `storage` allows storing it,
   * a set without a row yet (id null, `storable`) that gets one when its first iteration computes
   * (`keep`); else a set whose iterations are computed for the request only (id null).
   */
  async openSet(runId: string, request: MethodRequest, storage: SetStorage): Promise<AdvantageSet> {
    const r = this.resolve(request);
    if (!isUuid(runId)) throw runNotFound(runId);
    const res = await this.db.pool.query<{ id: string }>(
      `SELECT id FROM advantage_sets WHERE run_id = $1 AND method = $2 AND params_key = $3 AND estimator_version = $4`,
      [runId, r.method, JSON.stringify(r.params), r.version],
    );
    const storable = storage === 'any' || isDefault(r.method, r.params);
    return { id: res.rows[0]?.id ?? null, runId, ...r, storable };
  }

  /**
   * The set with its row, made now if it has none (for a storable set, once an iteration of it has
   * computed). Fills in `set.id` in place, so that every holder of the set (a request's later
   * iterations, a DataLoader's cache) uses the row from then on.
   */
  async keep(set: AdvantageSet): Promise<StoredSet> {
    if (set.id === null)
      set.id = (await this.ensureSet(set.runId, { name: set.method, params: set.params })).id;
    return set as StoredSet;
  }

  async ensureSet(runId: string, request: MethodRequest): Promise<StoredSet> {
    const r = this.resolve(request);
    if (!isUuid(runId)) throw runNotFound(runId);
    const key = JSON.stringify(r.params);
    // Two requests may create the same set at once. The one whose INSERT meets the other's waits
    // for it to commit and inserts nothing, but its SELECT still sees the statement's snapshot,
    // from before that commit: no row. The statement is then run again, with a new snapshot.
    for (let attempt = 0; ; attempt++) {
      // The foreign key on run_id tells an unknown run apart: no separate lookup on this hot path.
      const res = await this.db.pool
        .query<{ id: string }>(
          `WITH ins AS (
           INSERT INTO advantage_sets (run_id, method, params, params_key, estimator_version) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (run_id, method, params_key, estimator_version) DO NOTHING RETURNING id)
         SELECT id FROM ins UNION ALL
         SELECT id FROM advantage_sets WHERE run_id = $1 AND method = $2 AND params_key = $4 AND estimator_version = $5`,
          [runId, r.method, key, key, r.version],
        )
        .catch((e: { code?: string }) => {
          throw e.code === '23503' ? runNotFound(runId) : e;
        });
      const row = res.rows[0];
      if (row) return { id: row.id, runId, method: r.method, params: r.params, version: r.version };
      if (attempt === 4)
        throw new Error(
          `advantage set of ${r.method} on run ${runId}: not found after it was created`,
        );
    }
  }

  /**
   * The iteration's advantages under `set`, always those the estimator gives on the iteration as it
   * stands: a stored version is used only if it was computed from the current log position (late
   * steps, trajectories or outcomes make it stale); otherwise the iteration is read, estimated, and
   * the new version stored (if the set is stored) — or, with `store: 'caller'`, returned as
   * `unstored` for the caller to write in a transaction of its own. With `diagnostics`, a stored
   * version without them (a job's) counts as missing: computing it again fills them in. The check for a stored version,
   * the shape and the steps come from one snapshot, in two round trips when it must compute.
   */
  async iteration(
    set: AdvantageSet,
    iteration: number,
    {
      diagnostics = true,
      store = 'now',
      within,
    }: {
      diagnostics?: boolean;
      store?: 'now' | 'caller';
      /** Read in this transaction's snapshot (an export's) rather than the database's present. */
      within?: pg.ClientBase;
    } = {},
  ): Promise<IterationAdvantages & { unstored?: StoredIteration }> {
    let fresh: DecodedIteration | undefined;
    const snapshot = await readIteration(this.db.pool, set.runId, iteration, {
      steps: true,
      within,
      inputs: methodInputs(set.method, set.params),
      first:
        set.id === null
          ? undefined
          : {
              sql: freshIterationSql(set.runId, [set.id], iteration, diagnostics),
              enough: (rows) => {
                const row = rows[0] as FreshRow | undefined;
                fresh = row && decodeFresh(row, iteration, diagnostics);
                return fresh !== undefined;
              },
            },
    });
    if (fresh && snapshot) return { ...fresh, shape: snapshot.shape, reused: true };
    if (!snapshot?.batch) throw noRollouts(set.runId, iteration);
    const row = await this.estimateRow(set, snapshot);
    const computed = { ...decodeStored(row), shape: snapshot.shape, reused: false };
    if (set.id === null && !set.storable) return computed;
    const stored = await this.keep(set); // computed without error: now the set may have its row
    if (store === 'caller') return { ...computed, unstored: row };
    await insertIterations(this.db.pool, set.runId, stored.id, [row]);
    return computed;
  }

  /**
   * Every set's advantages of one iteration, all computed from the same version of it: if steps or
   * outcomes arrive while they are read, they are read again (a few times at most).
   */
  async sameVersion(
    sets: AdvantageSet[],
    iteration: number,
    within?: pg.ClientBase,
  ): Promise<IterationAdvantages[]> {
    for (let attempt = 0; ; attempt++) {
      const stored = await this.storedVersions(sets, iteration, within);
      const versions: IterationAdvantages[] = [];
      for (const [n, set] of sets.entries())
        versions.push(
          stored[n] ?? (await this.iteration(set, iteration, { diagnostics: false, within })),
        );
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
   * The fresh stored versions of several sets' iteration (no diagnostics), with its shape, in one
   * snapshot and one round trip: `compare` reads five or more sets of one iteration, and reading
   * them one by one read the same shape again for each. Undefined for a set without a fresh version.
   */
  private async storedVersions(
    sets: AdvantageSet[],
    iteration: number,
    within?: pg.ClientBase,
  ): Promise<(IterationAdvantages | undefined)[]> {
    const ids = [...new Set(sets.flatMap((s) => (s.id === null ? [] : [s.id])))];
    if (ids.length === 0 || sets.length === 1) return sets.map(() => undefined);
    const runId = (sets[0] as AdvantageSet).runId;
    let rows: FreshRow[] = [];
    const snapshot = await readIteration(this.db.pool, runId, iteration, {
      steps: false,
      within,
      first: {
        sql: freshIterationSql(runId, ids, iteration, false),
        enough: (found) => {
          rows = found as FreshRow[];
          return true;
        },
      },
    });
    if (!snapshot) return sets.map(() => undefined);
    const byId = new Map(rows.map((r) => [r.set_id, r]));
    return sets.map((set) => {
      const row = set.id === null ? undefined : byId.get(set.id);
      const fresh = row && decodeFresh(row, iteration, false);
      return fresh && { ...fresh, shape: snapshot.shape, reused: true };
    });
  }

  /**
   * The bulk path for recompute jobs, in three parts so a job can read the next chunk and store the
   * previous one while it estimates this one: `loadMany` reads several iterations in one snapshot,
   * only the columns the method reads (texts, when it reads any, cached across calls);
   * `estimateLoaded` estimates them on the worker threads in parallel; `store` stores them with one
   * statement, each stamped with the log position it was read at.
   */
  async loadMany(
    set: AdvantageSet,
    iterations: number[],
    texts?: Map<string, string>,
  ): Promise<Map<number, IterationSnapshot>> {
    const inputs = methodInputs(set.method, set.params);
    const read = await readIterations(this.db.pool, set.runId, iterations, {
      steps: true,
      inputs,
      texts,
    });
    // Read from the step slices: pack them (if complete) for the next job that reads them.
    if ([...read.values()].some((it) => !it.packed && it.stepCount > 0))
      this.packer.poke(set.runId, true);
    return read;
  }

  async estimateLoaded(
    set: StoredSet,
    iterations: number[],
    snapshots: Map<number, IterationSnapshot>,
  ): Promise<StoredIteration[]> {
    const read = iterations.map((i) => snapshots.get(i));
    const ready = read.filter((s): s is IterationSnapshot => Boolean(s?.batch));
    // Without diagnostics: a job's versions are stored without them (computed when first asked for).
    const outs = await this.estimators.runMany(
      ready.map((s) => s.batch as ColumnarBatch),
      set.method,
      set.params,
      { diagnostics: false },
    );
    // The first failure in iteration order, whichever thread finished first: the same input, the same message.
    let at = 0;
    return iterations.map((i, j) => {
      const snapshot = read[j];
      if (!snapshot?.batch) throw noRollouts(set.runId, i);
      return this.toRow(set, snapshot, outs[at++] as PackedEstimate | EstimatorInputError);
    });
  }

  store(set: StoredSet, rows: StoredIteration[]): Promise<void> {
    return insertRecomputed(this.db.pool, set.runId, set.id, rows);
  }

  /** The iterations of a set whose stored version is fresh (computed from their current log position). */
  freshIterations(set: StoredSet, iterations?: number[]): Promise<number[]> {
    return freshIterations(this.db.pool, set.runId, set.id, iterations);
  }

  private async estimateRow(
    set: AdvantageSet,
    snapshot: IterationSnapshot,
  ): Promise<StoredIteration> {
    const out = await this.estimators
      .run(snapshot.batch as ColumnarBatch, set.method, set.params)
      .catch((e: unknown) => {
        if (e instanceof EstimatorInputError) return e;
        throw e;
      });
    return this.toRow(set, snapshot, out);
  }

  /** An estimate as it is stored; bad input as the error a request or a job reports. */
  private toRow(
    set: AdvantageSet,
    snapshot: IterationSnapshot,
    out: PackedEstimate | EstimatorInputError,
  ): StoredIteration {
    if (out instanceof EstimatorInputError) {
      throw new DomainError(
        ErrorCode.InvalidInput,
        `${set.method} on run ${set.runId} iteration ${snapshot.iteration}: ${out.message}`,
        { iteration: snapshot.iteration, estimatorError: out.code },
      );
    }
    this.metrics.estimatorSeconds.observe({ method: set.method }, out.ms / 1000);
    return {
      iteration: snapshot.iteration,
      inputsSeq: snapshot.inputsSeq,
      stepCount: (snapshot.batch as ColumnarBatch).stepCount,
      advantages: asBuffer(out.advantages),
      diagnostics: out.diagnostics && {
        ...out.diagnostics,
        values: asBuffer(out.diagnostics.values),
      },
      summary: out.summary,
      computeMs: out.ms,
    };
  }

  /** The step count of each of `iterations` that holds rollouts. */
  async stepCounts(runId: string, iterations: number[]): Promise<Map<number, number>> {
    const res = await this.db.pool.query<{ iteration: number; step_count: number }>(
      'SELECT iteration, step_count FROM iterations WHERE run_id = $1 AND iteration = ANY($2::int[])',
      [runId, iterations],
    );
    return new Map(res.rows.map((r) => [r.iteration, r.step_count]));
  }

  /** Iterations that hold rollouts, and which of them are complete (a later iteration exists, or the run ended). */
  async iterationsOf(
    runId: string,
    db: Pick<pg.ClientBase, 'query'> = this.db.pool,
  ): Promise<{ all: number[]; complete: number[] }> {
    const res = await db.query<{ iteration: number; complete: boolean }>(
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
         ON i.run_id = s.run_id AND i.set_id = s.id
       WHERE s.run_id = $1 GROUP BY s.run_id, s.id ORDER BY s.id`,
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

/** A Buffer over the same bytes (what crossed from a worker thread arrives as a plain Uint8Array). */
const asBuffer = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** Whether every parameter is at the method's default (the set a bare `{name}` request names). */
function isDefault(method: string, params: Record<string, unknown>): boolean {
  const defaults = resolveParams(method, getMethod(method).params, {});
  return JSON.stringify(defaults) === JSON.stringify(params);
}
