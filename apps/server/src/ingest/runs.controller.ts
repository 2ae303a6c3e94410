import { Body, Controller, HttpCode, Inject, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { AppendResult } from './append-session';
import { EventAppender } from './event-appender.service';
import { ndjsonEvents } from './ndjson-source';
import { RunsService } from './runs.service';

const NDJSON_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/ndjson'];

/** HTTP ingest: create a run, stream events into it as NDJSON. */
@Controller('v1/runs')
export class RunsController {
  constructor(
    @Inject(RunsService) private readonly runs: RunsService,
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(201)
  create(@Body() body: unknown): Promise<{ id: string }> {
    return this.runs.create(body);
  }

  @Post(':id/events')
  @HttpCode(200)
  append(@Param('id') runId: string, @Req() req: Request): Promise<AppendResult> {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (!NDJSON_TYPES.includes(type)) {
      throw new DomainError(
        ErrorCode.UnsupportedMediaType,
        `send events as Content-Type: application/x-ndjson (one JSON event per line), not ${JSON.stringify(type || 'nothing')}`,
      );
    }
    return this.appender.append(runId, ndjsonEvents(req, this.config.limits));
  }
}
