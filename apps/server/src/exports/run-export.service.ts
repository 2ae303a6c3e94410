import { Inject, Injectable } from '@nestjs/common';
import {
  AdvantageSetsService,
  type MethodRequest,
  type SetStorage,
} from '../advantages/advantage-sets.service';
import { readIteration } from '../advantages/iteration-reader';
import type pg from 'pg';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { Database } from '../database/database';
import { SnapshotConnection } from '../database/snapshot-connection';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { ProcessBudget } from '../access/process-budget';
import { iterationColumns, OPTIONAL_COLUMNS, STEP_COLUMNS, type ExportColumn } from './export-rows';
import type { BatchWriter } from './export-writers';
import { refuseMissingFields } from './missing-fields';

export interface ExportRequest {
  runId: string;
  iterations?: number[];
  methods: MethodRequest[];
  /** Optional large columns: embedding, tokenLogprobs. */
  include: string[];
  storage: SetStorage;
}

/**
 * A run's steps with the chosen methods' advantages, iteration by iteration into a writer:
 * memory holds one iteration at a time whatever the run's size. An export reads one snapshot of the
 * database from its checks to its last row (`inSnapshot`), so a run still being written exports as
 * it stood when the request came: what its checks passed is what is written, and each iteration's
 * rows, outcomes and advantages agree. Steps arriving meanwhile wait for the next export.
 */
@Injectable()
export class RunExportService {
  /** Exports in progress: each holds a PostgreSQL connection for as long as its client reads. */
  private readonly running: ProcessBudget;

  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
    @Inject(AppConfigToken) config: AppConfig,
  ) {
    this.running = new ProcessBudget(
      config.limits.exportConcurrency,
      (held) =>
        `${held} exports are in progress, the most this server runs at once (CREDITLAB_EXPORT_CONCURRENCY): retry shortly`,
      5,
    );
  }

  /** The columns of an export (checked before the response starts). */
  columns(req: ExportRequest): ExportColumn[] {
    const unknown = req.include.filter((c) => !Object.hasOwn(OPTIONAL_COLUMNS, c));
    if (unknown.length)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `include: unknown column ${unknown.join(', ')}; one of ${Object.keys(OPTIONAL_COLUMNS).join(', ')}`,
        { path: 'include' },
      );
    return [
      ...STEP_COLUMNS,
      ...req.include.map((c) => OPTIONAL_COLUMNS[c] as ExportColumn),
      ...labels(req.methods.map((m) => this.sets.resolve(m).method)).map((label) => ({
        name: `adv:${label}`,
        type: 'FLOAT' as const,
      })),
    ];
  }

  /**
   * Runs `work` with a snapshot of the database of its own (a connection outside the pools, held
   * for the whole export): at most CREDITLAB_EXPORT_CONCURRENCY at once, since each holds a
   * PostgreSQL connection for as long as its client reads; more are refused (503, Retry-After).
   */
  async inSnapshot<T>(work: (snapshot: ExportSnapshot) => Promise<T>): Promise<T> {
    return this.running.hold(1, async () => {
      const connection = await SnapshotConnection.open(this.db.url);
      try {
        return await work(connection.client);
      } finally {
        // Not waited for: the export is counted out as soon as its answer has ended, so that a
        // client starting its next export on reading the last byte does not find it still counted.
        void connection.close();
      }
    });
  }

  /** The iterations to export: those asked for (each must hold rollouts), else all that do. */
  async iterations(req: ExportRequest, snapshot: ExportSnapshot): Promise<number[]> {
    const known = (await this.sets.iterationsOf(req.runId, snapshot)).all;
    if (!req.iterations) return known;
    const missing = req.iterations.filter((i) => !known.includes(i));
    if (missing.length)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `iterations: run ${req.runId} has no rollouts in iteration ${missing.join(', ')}`,
        { path: 'iterations' },
      );
    return [...new Set(req.iterations)].sort((a, b) => a - b);
  }

  /** Refuses a method that needs a step field some exported step lacks (checked before the first byte). */
  async checkFields(
    req: ExportRequest,
    iterations: number[],
    snapshot: ExportSnapshot,
  ): Promise<void> {
    const methods = req.methods.map((m) => this.sets.resolve(m).method);
    await refuseMissingFields(snapshot, req.runId, iterations, methods);
  }

  async write(
    req: ExportRequest,
    iterations: number[],
    out: BatchWriter,
    snapshot: ExportSnapshot,
  ): Promise<number> {
    const sets = await Promise.all(
      req.methods.map((m) => this.sets.openSet(req.runId, m, req.storage)),
    );
    const names = labels(sets.map((s) => s.method));
    let rows = 0;
    for (const i of iterations) {
      const versions = sets.length ? await this.sets.sameVersion(sets, i, snapshot) : [];
      const version =
        versions[0] ??
        (await readIteration(this.db.pool, req.runId, i, { steps: false, within: snapshot }));
      if (!version) continue;
      const batch = await iterationColumns(
        snapshot,
        req.runId,
        version,
        versions.map((it, m) => ({ label: names[m] as string, values: it.advantages })),
        req.include,
      );
      await out.write(batch);
      rows += version.stepCount;
    }
    return rows;
  }
}

/** The connection whose transaction an export reads in. */
export type ExportSnapshot = pg.ClientBase;

/** Column labels: a method's name, with #i when the same method is exported under several parameter sets. */
function labels(methods: string[]): string[] {
  return methods.map((m, i) => (methods.filter((x) => x === m).length > 1 ? `${m}#${i}` : m));
}
