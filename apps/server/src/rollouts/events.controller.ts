import { Controller, HttpCode, Inject, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Caller } from '../access/caller.decorator';
import { ConcurrencyLimits } from '../access/concurrency-limits';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { DomainError, ErrorCode } from '../errors/domain-error';
import type { AppendResult } from './append-session';
import { EventAppender } from './event-appender.service';
import { refuseEncodedBody } from '../http/unencoded-body';
import { RunIdPipe } from '../http/run-id.pipe';

const NDJSON_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/ndjson'];

/** HTTP ingest: a run's events streamed as NDJSON, one request all or nothing. */
@Controller('v1/runs/:id/events')
export class EventsController {
  private readonly uploads: ConcurrencyLimits;

  constructor(
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(AppConfigToken) private readonly config: AppConfig,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {
    this.uploads = new ConcurrencyLimits('ingest requests', config.limits.ingestConcurrencyPerKey);
  }

  @Post()
  @HttpCode(200)
  @Requires('write')
  async append(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
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
    refuseEncodedBody(req);
    return this.uploads.run(caller, () => this.appender.appendBody(runId, req));
  }
}
