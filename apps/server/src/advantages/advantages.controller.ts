import {
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { findUnstorable, firstIssue, formatPath } from '@creditlab/events';
import { Caller } from '../access/caller.decorator';
import { hasRole, type Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { JsonBody } from '../http/json-body';
import { knownKeysObject } from '../http/known-keys-object';
import { ParseIterationPipe } from '../http/parse-iteration.pipe';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { EventAppender } from '../rollouts/event-appender.service';
import {
  AdvantageSetsService,
  type AdvantageSet,
  type IterationAdvantages,
} from './advantage-sets.service';
import { insertIterations } from './advantage-store';
import { advantagesDocument } from './advantages-document';
import { RunIdPipe } from '../http/run-id.pipe';

const consumeSchema = knownKeysObject(
  {
    method: z.string().min(1),
    params: z.record(z.string(), z.unknown()).default({}),
    /** Idempotency key of the advantages.used event this request records (a retried request records it once). */
    eventId: z.uuid().optional(),
    diagnostics: z.boolean().default(false),
  },
  'field',
);

const readSchema = knownKeysObject(
  {
    method: z.string().min(1),
    params: z
      .string()
      .default('{}')
      .transform((text, ctx) => {
        try {
          const value = JSON.parse(text) as unknown;
          if (typeof value === 'object' && value !== null && !Array.isArray(value))
            return value as Record<string, unknown>;
        } catch {
          // reported below
        }
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"gamma":0.95}' });
        return z.NEVER;
      }),
    diagnostics: z.enum(['true', 'false']).default('false'),
  },
  'query parameter',
);

/**
 * An iteration's advantages under any method, two ways. `GET` reads them (any key; records
 * nothing). `POST` is the trainer's consumption: the same answer, plus an `advantages.used`
 * event in the run's stream saying which set the update consumed (idempotent by `eventId`).
 */
@Controller('v1/runs/:id/iterations/:iteration/advantages')
export class AdvantagesController {
  constructor(
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Get()
  @Requires('read')
  async read(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Query() query: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    await this.scope.assertRun(caller, runId);
    const q = parse(readSchema, query, 'query');
    const set = await this.sets.openSet(
      runId,
      { name: q.method, params: q.params },
      hasRole(caller, 'write') ? 'any' : 'defaults-only',
    );
    const withDiagnostics = q.diagnostics === 'true' && !wantsBinary(req);
    const it = await this.sets.iteration(set, iteration, { diagnostics: withDiagnostics });
    return this.answer(set, it, withDiagnostics, req, res);
  }

  @Post()
  @HttpCode(200)
  @Requires('write') // it records an advantages.used event in the run's stream
  async consume(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @JsonBody() body: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<unknown> {
    await this.scope.assertRun(caller, runId);
    const b = parse(consumeSchema, body === undefined ? {} : body, 'body'); // no body at all: as if {}
    const opened = await this.sets.openSet(runId, { name: b.method, params: b.params }, 'any');
    const withDiagnostics = b.diagnostics && !wantsBinary(req);
    const it = await this.sets.iteration(opened, iteration, {
      store: 'caller',
      diagnostics: withDiagnostics,
    });
    const set = await this.sets.keep(opened); // it has its row once an iteration computed
    // A version computed now is stored with the event, in its transaction: one commit, not two.
    const store = it.unstored;
    await this.appender.appendOne(
      runId,
      {
        id: b.eventId ?? randomUUID(),
        type: 'advantages.used',
        // Which version the update consumed: the iteration as it stood at inputsSeq.
        data: {
          iteration,
          method: set.method,
          params: set.params,
          advantageSetId: set.id,
          inputsSeq: it.inputsSeq,
        },
      },
      store && ((client) => insertIterations(client, runId, set.id, [store])),
    );
    return this.answer(set, it, withDiagnostics, req, res);
  }

  /** Raw little-endian float32 in canonical step order when asked for, else advantages/v1 JSON. */
  private answer(
    set: AdvantageSet,
    it: IterationAdvantages,
    withDiagnostics: boolean,
    req: Request,
    res: Response,
  ): unknown {
    if (set.id !== null) res.setHeader('X-Creditlab-Advantage-Set', set.id);
    res.setHeader('X-Creditlab-Reused', String(it.reused));
    res.setHeader('X-Creditlab-Inputs-Seq', String(it.inputsSeq));
    if (wantsBinary(req)) {
      res.setHeader('X-Creditlab-Steps', String(it.stepCount));
      return new StreamableFile(
        Buffer.from(it.advantages.buffer, it.advantages.byteOffset, it.advantages.byteLength),
        { type: 'application/octet-stream' },
      );
    }
    return advantagesDocument(set, it, withDiagnostics);
  }
}

function parse<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  // Before the schema: its records copy objects, and a copy loses a `__proto__` key unchecked.
  const unstorable = findUnstorable(value);
  if (unstorable) {
    const path = formatPath(unstorable.path);
    throw new DomainError(ErrorCode.InvalidInput, `${path || where}: ${unstorable.message}`, {
      path,
    });
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = firstIssue(parsed.error);
  throw new DomainError(ErrorCode.InvalidInput, `${issue.path || where}: ${issue.message}`, {
    path: issue.path,
  });
}

/** Raw float32 advantages rather than the JSON document (which alone can carry diagnostics). */
function wantsBinary(req: Request): boolean {
  return (req.headers.accept ?? '').includes('application/octet-stream');
}
