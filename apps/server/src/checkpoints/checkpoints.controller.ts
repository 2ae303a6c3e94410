import {
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Put,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { ParseIterationPipe } from '../http/parse-iteration.pipe';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { CheckpointsService, type CheckpointInfo } from './checkpoints.service';
import { refuseEncodedBody } from '../http/unencoded-body';
import { ConcurrencyLimits } from '../access/concurrency-limits';
import { uploadBody } from './upload-body';

const FORMAT = /^[\w.+/-]{1,100}$/;

/**
 * Checkpoints of a run: upload (PUT, raw bytes), list, download. `X-Creditlab-Checkpoint-Format`
 * names the format (the trainer's is creditlab-text-policy/v1); the digest comes back as a header
 * and in the `checkpoint.saved` event.
 */
@Controller('v1/runs/:id/checkpoints')
export class CheckpointsController {
  private readonly uploads: ConcurrencyLimits;

  constructor(
    @Inject(CheckpointsService) private readonly checkpoints: CheckpointsService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {
    this.uploads = new ConcurrencyLimits(
      'checkpoint uploads',
      config.limits.checkpointConcurrencyPerKey,
    );
  }

  @Put(':iteration')
  @HttpCode(201)
  @Requires('write')
  async upload(
    @Caller() caller: Principal,
    @Param('id') runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CheckpointInfo> {
    await this.scope.assertRun(caller, runId);
    const format = String(
      req.headers['x-creditlab-checkpoint-format'] ?? 'application/octet-stream',
    );
    if (!FORMAT.test(format))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `X-Creditlab-Checkpoint-Format: 1–100 of [A-Za-z0-9_.+/-], got ${JSON.stringify(format)}`,
      );
    refuseEncodedBody(req);
    // Each upload is held whole in memory until stored: a key has a few at a time, not any number.
    return this.uploads.run(caller, async () => {
      const { maxCheckpointBytes, idleMs } = this.config.limits;
      const data = await uploadBody(req, maxCheckpointBytes, idleMs).catch((e: unknown) => {
        res.setHeader('Connection', 'close'); // the rest of the body is not read
        throw e;
      });
      if (data.length === 0) throw new DomainError(ErrorCode.InvalidInput, 'empty checkpoint');
      const { created, checkpoint } = await this.checkpoints.store(runId, iteration, format, data);
      res.status(created ? 201 : 200);
      return checkpoint;
    });
  }

  @Get()
  @Requires('read')
  async list(@Caller() caller: Principal, @Param('id') runId: string): Promise<CheckpointInfo[]> {
    await this.scope.assertRun(caller, runId);
    return this.checkpoints.list(runId);
  }

  @Get(':iteration')
  @Requires('read')
  async download(
    @Caller() caller: Principal,
    @Param('id') runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    await this.scope.assertRun(caller, runId);
    const { info, data } = await this.checkpoints.data(runId, iteration);
    res.setHeader('X-Creditlab-Checkpoint-Format', info.format);
    res.setHeader('X-Creditlab-Sha256', info.sha256);
    return new StreamableFile(data, { type: 'application/octet-stream', length: data.length });
  }
}

/** Checkpoint numbers are iterations: 0 ≤ k < 2^31. */
