import { Inject } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { isUuid } from '../database/uuid';
import {
  Args,
  Context,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { Database } from '../database/database';
import { EventAppender } from '../ingest/event-appender.service';
import { RunsService } from '../ingest/runs.service';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { Caller } from '../access/caller.decorator';
import { seesProject, type Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import {
  AppendEventsResult,
  CreateRunInput,
  Iteration,
  RolloutGroupConnection,
  Run,
  RunConnection,
  RunEventConnection,
  RunFilter,
  RunFinishStatus,
} from './models';
import { decodeCursor, encodeCursor, pageSize, POSITION_CURSOR, RUN_CURSOR } from './pagination';
import type { ReadLoaders } from './read-loaders';

type RunRow = Awaited<ReturnType<Database['prisma']['run']['findFirst']>> & object;

/** Runs: list, fetch, create, append; and the run's nested fields. */
@Resolver(() => Run)
export class RunsResolver {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(RunsService) private readonly runService: RunsService,
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Query(() => RunConnection, {
    description:
      'Runs of the projects this key sees, newest first, filtered; cursor-paginated (first ≤ 100).',
  })
  @Requires('read')
  async runs(
    @Caller() caller: Principal,
    @Args('filter', { type: () => RunFilter, nullable: true }) filter: RunFilter | undefined,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
  ): Promise<RunConnection> {
    const limit = pageSize(first, 20, 100, 'runs');
    // A key confined to a project filtering on another one sees nothing, as if that project were empty.
    if (filter?.project && !seesProject(caller, filter.project))
      return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const where: Record<string, unknown> = {
      project: caller.project ?? filter?.project,
      env: filter?.env,
      method: filter?.method,
      status: filter?.status,
      ...(filter?.tags?.length ? { tags: { hasEvery: filter.tags } } : {}),
    };
    if (after) {
      const [createdAt, id] = decodeCursor(after, 'runs', RUN_CURSOR);
      where.OR = [
        { createdAt: { lt: new Date(createdAt) } },
        { createdAt: new Date(createdAt), id: { lt: id } },
      ];
    }
    const rows = await this.db.prisma.run.findMany({
      where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      nodes: page.map(toRun),
      pageInfo: {
        hasNextPage: rows.length > limit,
        endCursor: last ? encodeCursor([last.createdAt.toISOString(), last.id]) : null,
      },
    };
  }

  @Query(() => Run, { nullable: true, description: 'A run; null if absent or in another project.' })
  @Requires('read')
  async run(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<Run | null> {
    if (!isUuid(id)) return null;
    const row = await this.db.prisma.run.findUnique({ where: { id } });
    return row && seesProject(caller, row.project) ? toRun(row) : null;
  }

  @ResolveField(() => [Iteration], {
    description: 'Iterations with rollouts, metrics or evaluations, in order.',
  })
  iterations(@Parent() run: Run, @Context('loaders') loaders: ReadLoaders): Promise<Iteration[]> {
    return loaders.iterations.load(run.id);
  }

  @ResolveField(() => RolloutGroupConnection, {
    description: 'Task groups of one iteration in canonical order (first ≤ 100).',
  })
  async groups(
    @Parent() run: Run,
    @Context('loaders') loaders: ReadLoaders,
    @Args('iteration', { type: () => Int }) iteration: number,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
  ): Promise<RolloutGroupConnection> {
    const limit = pageSize(first, 20, 100, 'groups');
    const afterPosition = after ? decodeCursor(after, 'groups', POSITION_CURSOR)[0] : -1;
    const rows = await loaders.groups.load({
      runId: run.id,
      iteration,
      afterPosition,
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      nodes: page,
      pageInfo: {
        hasNextPage: rows.length > limit,
        endCursor: last ? encodeCursor([last.position]) : null,
      },
    };
  }

  @ResolveField(() => RunEventConnection, {
    description: 'The run’s event stream in seq order (first ≤ 1000).',
  })
  async events(
    @Parent() run: Run,
    @Context('loaders') loaders: ReadLoaders,
    @Args('after', {
      type: () => Int,
      nullable: true,
      description: 'Events with seq greater than this.',
    })
    after: number | undefined,
    @Args('types', { type: () => [String], nullable: true }) types: string[] | undefined,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
  ): Promise<RunEventConnection> {
    const limit = pageSize(first, 100, 1000, 'events');
    const rows = await loaders.events.load({
      runId: run.id,
      afterSeq: after ?? 0,
      types: types?.length ? types : null,
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      nodes: page,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: last ? String(last.seq) : null },
    };
  }

  @Mutation(() => Run, {
    description:
      'Creates a run (same as POST /v1/runs); with an `id` already used for the same input, returns that run.',
  })
  @Requires('write')
  async createRun(
    @Caller() caller: Principal,
    @Args('input', { type: () => CreateRunInput }) input: CreateRunInput,
  ): Promise<Run> {
    const { id } = await this.runService.create(stripNulls(input), caller);
    return (await this.run(caller, id)) as Run;
  }

  @Mutation(() => Run, {
    nullable: true,
    description:
      'Finishes a run whose trainer died without saying so: appends its run.finished event. A run already finished with this status is returned as it is; with another status, CONFLICT.',
  })
  @Requires('write')
  async finishRun(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('status', { type: () => RunFinishStatus }) status: RunFinishStatus,
    @Args('summary', { type: () => GraphQLJSON, nullable: true }) summary: unknown,
  ): Promise<Run | null> {
    await this.scope.assertRun(caller, runId);
    if (
      summary !== null &&
      summary !== undefined &&
      (typeof summary !== 'object' || Array.isArray(summary))
    )
      throw new DomainError(ErrorCode.InvalidInput, 'summary: must be a JSON object', {
        path: 'summary',
      });
    const current = await this.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    if (current.status !== 'running') {
      if (current.status === status) return toRun(current);
      throw new DomainError(
        ErrorCode.Conflict,
        `run ${runId} is already ${current.status} (finished at ${current.finishedAt?.toISOString() ?? '?'})`,
        { status: current.status },
      );
    }
    const data = { status, ...(summary === null || summary === undefined ? {} : { summary }) };
    await this.appender.appendOne(runId, { id: randomUUID(), type: 'run.finished', data });
    return this.run(caller, runId);
  }

  @Mutation(() => AppendEventsResult, {
    description:
      'Appends events to a run, all or nothing, like POST /v1/runs/{id}/events (for small volumes).',
  })
  @Requires('write')
  async appendEvents(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('events', { type: () => [GraphQLJSON] }) events: unknown[],
  ): Promise<AppendEventsResult> {
    if (events.length > 10_000) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `appendEvents takes at most 10000 events; stream larger volumes as NDJSON to POST /v1/runs/${runId}/events`,
      );
    }
    await this.scope.assertRun(caller, runId);
    async function* source() {
      for (let i = 0; i < events.length; i++) yield { position: i + 1, value: events[i] };
    }
    return this.appender.append(runId, source(), (p) => `events[${p - 1}]`);
  }
}

function toRun(r: RunRow): Run {
  return {
    id: r.id,
    name: r.name,
    project: r.project,
    env: r.env,
    method: r.method,
    params: r.params,
    config: r.config,
    seed: r.seed === null ? null : Number(r.seed),
    tags: r.tags,
    status: r.status,
    lastSeq: Number(r.lastSeq),
    lastIteration: r.lastIteration,
    parentRunId: r.parentRunId,
    forkIteration: r.forkIteration,
    createdAt: r.createdAt,
    finishedAt: r.finishedAt,
    summary: r.summary,
  };
}

/** GraphQL passes absent optional inputs as undefined but explicit nulls as null; the run schema wants them absent. */
function stripNulls(input: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined));
}
