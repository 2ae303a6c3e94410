import { Body, Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import type { AppendResult } from './append-session';
import { EventAppender } from './event-appender.service';
import { ndjsonEvents } from './ndjson-source';
import { RunsService } from './runs.service';
import { ConcurrencyLimits } from '../access/concurrency-limits';

const NDJSON_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/ndjson'];

/** HTTP ingest: create a run, stream events into it as NDJSON. */
@Controller('v1/runs')
export class RunsController {
  private readonly uploads: ConcurrencyLimits;

  constructor(
    @Inject(RunsService) private readonly runs: RunsService,
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(AppConfigToken) private readonly config: AppConfig,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {
    this.uploads = new ConcurrencyLimits('ingest requests', config.limits.ingestConcurrencyPerKey);
  }

  /** 201 with the new run's id; 200 with the same answer when a run with the body's `id` and body exists. */
  @Post()
  @HttpCode(201)
  @Requires('write')
  async create(
    @Caller() caller: Principal,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ id: string }> {
    const { id, created } = await this.runs.create(body, caller);
    if (!created) res.status(200);
    return { id };
  }

  @Post(':id/events')
  @HttpCode(200)
  @Requires('write')
  async append(
    @Caller() caller: Principal,
    @Param('id') runId: string,
    @Req() req: Request,
  ): Promise<AppendResult> {
    await this.scope.assertRun(caller, runId);
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (!NDJSON_TYPES.includes(type)) {
      throw new DomainError(
        ErrorCode.UnsupportedMediaType,
        `send events as Content-Type: application/x-ndjson (one JSON event per line), not ${JSON.stringify(type || 'nothing')}`,
      );
    }
    return this.uploads.run(caller, () =>
      this.appender.append(runId, ndjsonEvents(req, this.config.limits)),
    );
  }
}
