import {
  Body,
  Controller,
  HttpCode,
  Inject,
  Param,
  ParseIntPipe,
  Post,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { firstIssue } from '@creditlab/events';
import { Database } from '../database/database';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { EventAppender } from '../ingest/event-appender.service';
import { AdvantageSetsService } from './advantage-sets.service';
import { advantagesDocument } from './advantages-document';
import { iterationStructure } from './iteration-structure';

const requestSchema = z.object({
  method: z.string().min(1),
  params: z.record(z.string(), z.unknown()).default({}),
  /** Idempotency key of the advantages.used event this request records (a retried request records it once). */
  eventId: z.uuid().optional(),
  diagnostics: z.boolean().default(false),
});

/**
 * The trainer's online path: the advantages of iteration i under a method,
 * computed now or read from the stored set, and an `advantages.used` event in
 * the run's stream saying which set the update consumed.
 */
@Controller('v1/runs/:id/iterations/:iteration/advantages')
export class AdvantagesController {
  constructor(
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(Database) private readonly db: Database,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Post()
  @HttpCode(200)
  @Requires('write') // it records an advantages.used event in the run's stream
  async advantages(
    @Caller() caller: Principal,
    @Param('id') runId: string,
    @Param('iteration', ParseIntPipe) iteration: number,
    @Body() body: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    await this.scope.assertRun(caller, runId);
    const parsed = requestSchema.safeParse(body ?? {});
    if (!parsed.success) {
      const issue = firstIssue(parsed.error);
      throw new DomainError(ErrorCode.InvalidInput, `${issue.path || 'body'}: ${issue.message}`, {
        path: issue.path,
      });
    }
    const set = await this.sets.ensureSet(runId, {
      name: parsed.data.method,
      params: parsed.data.params,
    });
    const it = await this.sets.iteration(set, iteration);
    await this.appender.appendOne(runId, {
      id: parsed.data.eventId ?? randomUUID(),
      type: 'advantages.used',
      data: { iteration, method: set.method, params: set.params, advantageSetId: set.id },
    });
    res.setHeader('X-Creditlab-Advantage-Set', set.id);
    res.setHeader('X-Creditlab-Reused', String(it.reused));
    if ((req.headers.accept ?? '').includes('application/octet-stream')) {
      res.setHeader('X-Creditlab-Steps', String(it.stepCount));
      return new StreamableFile(
        Buffer.from(it.advantages.buffer, it.advantages.byteOffset, it.advantages.byteLength),
        {
          type: 'application/octet-stream',
        },
      );
    }
    const shape = await iterationStructure(this.db.pool, runId, iteration);
    return advantagesDocument(set, it, shape, parsed.data.diagnostics);
  }
}
