import { Controller, Get, Inject, Param, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { z } from 'zod';
import { findUnstorable, firstIssue, formatPath, MAX_INT32 } from '@creditlab/events';
import { Caller } from '../access/caller.decorator';
import { hasRole, type Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { knownKeysObject } from '../http/known-keys-object';
import { csvWriter, parquetWriter } from './export-writers';
import { RunExportService } from './run-export.service';
import { RunIdPipe } from '../http/run-id.pipe';

const list = (what: string) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((xs) => xs.length > 0, `a comma-separated list of ${what}`);

const querySchema = knownKeysObject(
  {
    format: z.enum(['csv', 'parquet']).default('csv'),
    iterations: list('iterations')
      .transform((xs, ctx) => {
        // Digits only, as in an iteration's path (…/iterations/7/…): "1e3" and "0x1" are not 1000 and 1.
        const bad = xs.find((x) => !/^\d{1,10}$/.test(x) || Number(x) > MAX_INT32);
        if (bad === undefined) return xs.map(Number);
        ctx.addIssue({
          code: 'custom',
          message: `whole numbers from 0 to ${MAX_INT32}, got ${JSON.stringify(bad)}`,
        });
        return z.NEVER;
      })
      .optional(),
    methods: z
      .string()
      .transform((text, ctx) => {
        let value: unknown;
        try {
          value = JSON.parse(text) as unknown;
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be JSON, e.g. [{"name":"gigpo"}]' });
          return z.NEVER;
        }
        // Before the schema below: its records copy objects, and a copy loses a `__proto__` key unchecked.
        const unstorable = findUnstorable(value);
        if (!unstorable) return value;
        ctx.addIssue({
          code: 'custom',
          message: `${formatPath(unstorable.path)}: ${unstorable.message}`,
        });
        return z.NEVER;
      })
      .pipe(
        z
          .array(
            knownKeysObject(
              {
                name: z.string().min(1),
                params: z.record(z.string(), z.unknown()).optional(),
              },
              'field',
            ),
          )
          .max(12),
      )
      .default([]),
    include: list('column names')
      .transform((xs) => [...new Set(xs)]) // a column named twice is one column
      .default([]),
  },
  'query parameter',
);

/**
 * A run exported as CSV or Parquet, streamed: every step with its fields and the chosen methods'
 * advantages. A read key may export; nothing is recorded, and a read key's non-default parameters
 * are computed for the export without being stored.
 */
@Controller('v1/runs/:id/export')
export class ExportController {
  constructor(
    @Inject(RunExportService) private readonly exports: RunExportService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Get()
  @Requires('read')
  async export(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Query() query: unknown,
    @Res() res: Response,
  ): Promise<void> {
    await this.scope.assertRun(caller, runId);
    const parsed = querySchema.safeParse(query);
    if (!parsed.success) {
      const issue = firstIssue(parsed.error);
      throw new DomainError(ErrorCode.InvalidInput, `${issue.path || 'query'}: ${issue.message}`, {
        path: issue.path,
      });
    }
    const q = parsed.data;
    const request = {
      runId,
      iterations: q.iterations,
      methods: q.methods,
      include: q.include,
      storage: hasRole(caller, 'write') ? ('any' as const) : ('defaults-only' as const),
    };
    // What a request can get wrong is checked before the first byte goes out; only what computing
    // finds (an advantage beyond float32) can still come after it and cut the file short.
    const columns = this.exports.columns(request);
    await this.exports.inSnapshot(async (snapshot) => {
      const iterations = await this.exports.iterations(request, snapshot);
      await this.exports.checkFields(request, iterations, snapshot);
      res.status(200);
      res.setHeader(
        'Content-Type',
        q.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/vnd.apache.parquet',
      );
      res.setHeader('Content-Disposition', `attachment; filename="run-${runId}.${q.format}"`);
      const writer = q.format === 'csv' ? csvWriter(res, columns) : parquetWriter(res, columns);
      try {
        await this.exports.write(request, iterations, writer, snapshot);
        await writer.end();
      } catch (e) {
        // The status line is gone: all that is left is to cut the response short (a truncated file).
        res.destroy(e as Error);
      }
    });
  }
}
