import { Controller, HttpCode, Inject, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { Requires } from '../access/requires.decorator';
import { JsonBody } from '../http/json-body';
import { RunsService } from './runs.service';

/** Creating a run over HTTP. */
@Controller('v1/runs')
export class RunsController {
  constructor(@Inject(RunsService) private readonly runs: RunsService) {}

  /** 201 with the new run's id; 200 with the same answer when a run with the body's `id` and body exists. */
  @Post()
  @HttpCode(201)
  @Requires('write')
  async create(
    @Caller() caller: Principal,
    @JsonBody() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ id: string }> {
    const { id, created } = await this.runs.create(body, caller);
    if (!created) res.status(200);
    return { id };
  }
}
