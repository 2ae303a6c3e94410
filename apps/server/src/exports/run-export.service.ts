import { Inject, Injectable } from '@nestjs/common';
import {
  AdvantageSetsService,
  type MethodRequest,
  type SetStorage,
} from '../advantages/advantage-sets.service';
import { readIteration } from '../advantages/iteration-reader';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
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
 * memory holds one iteration at a time whatever the run's size. Each iteration's rows and
 * advantages come from one version of it (steps arriving meanwhile wait for the next export).
 */
@Injectable()
export class RunExportService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
  ) {}

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

  /** The iterations to export: those asked for (each must hold rollouts), else all that do. */
  async iterations(req: ExportRequest): Promise<number[]> {
    const known = (await this.sets.iterationsOf(req.runId)).all;
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
  async checkFields(req: ExportRequest, iterations: number[]): Promise<void> {
    const methods = req.methods.map((m) => this.sets.resolve(m).method);
    await refuseMissingFields(this.db.pool, req.runId, iterations, methods);
  }

  async write(req: ExportRequest, iterations: number[], out: BatchWriter): Promise<number> {
    const sets = await Promise.all(
      req.methods.map((m) => this.sets.openSet(req.runId, m, req.storage)),
    );
    const names = labels(sets.map((s) => s.method));
    let rows = 0;
    for (const i of iterations) {
      const versions = sets.length ? await this.sets.sameVersion(sets, i) : [];
      const version =
        versions[0] ?? (await readIteration(this.db.pool, req.runId, i, { steps: false }));
      if (!version) continue;
      const batch = await iterationColumns(
        this.db.pool,
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

/** Column labels: a method's name, with #i when the same method is exported under several parameter sets. */
function labels(methods: string[]): string[] {
  return methods.map((m, i) => (methods.filter((x) => x === m).length > 1 ? `${m}#${i}` : m));
}
