import { Inject } from '@nestjs/common';
import {
  Args,
  Context,
  Float,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { EventType, RunSort } from '../graphql/enums';
import { decodeCursor, encodeCursor, pageSize, SEQ_CURSOR, toPage } from '../graphql/pagination';
import type { RunLoaders } from './run-loaders';
import {
  CreateRunInput,
  Iteration,
  Run,
  RunConnection,
  RunEventConnection,
  RunFilter,
  RunFinishStatus,
  RunSeries,
} from './run.models';
import type { Reader } from '../database/database';
import { RunQueries, toRun } from './run-queries.service';
import { RunsService } from './runs.service';

/** Runs: list, fetch, create, finish; a run's iterations and its event stream. */
@Resolver(() => Run)
export class RunsResolver {
  constructor(
    @Inject(RunQueries) private readonly queries: RunQueries,
    @Inject(RunsService) private readonly runService: RunsService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Query(() => RunConnection, {
    description:
      'Runs of the projects this key sees, newest first, filtered; cursor-paginated (first ≤ 100).',
  })
  @Requires('read')
  runs(
    @Caller() caller: Principal,
    @Args('filter', { type: () => RunFilter, nullable: true }) filter: RunFilter | undefined,
    @Args('sort', { type: () => RunSort, defaultValue: RunSort.CREATED_DESC }) sort: RunSort,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
    @Args('sortMetric', {
      type: () => String,
      nullable: true,
      description:
        'The metric METRIC_DESC and METRIC_ASC sort by: a name logged in metrics.logged (e.g. successRate), or evaluation.successRate for held-out success. Runs tied on it, and those without it, newest first. A run whose value changes while pages are read moves in the order, so it may be met twice or not at all (as with LAST_ITERATION_DESC).',
    })
    sortMetric: string | undefined,
    @Context('reader') reader: Reader,
  ): Promise<RunConnection> {
    return this.queries.list(reader, caller, filter, sort, first, after, sortMetric ?? undefined);
  }

  @Query(() => [RunSeries], {
    description:
      'Metrics of several runs as series over iterations, for plotting them together (at most 20 runs; every metric unless `names`).',
  })
  @Requires('read')
  metricSeries(
    @Caller() caller: Principal,
    @Args('runIds', { type: () => [ID] }) runIds: string[],
    @Args('names', { type: () => [String], nullable: true }) names: string[] | undefined,
    @Context('reader') reader: Reader,
  ): Promise<RunSeries[]> {
    return this.queries.metricSeries(reader, caller, runIds, names ?? undefined);
  }

  @ResolveField(() => Run, {
    nullable: true,
    description: 'The run this one was forked or retrained from.',
  })
  async parent(@Parent() run: Run, @Context('loaders') loaders: RunLoaders): Promise<Run | null> {
    if (!run.parentRunId) return null;
    const row = await loaders.runs.load(run.parentRunId);
    return row ? toRun(row) : null;
  }

  @ResolveField(() => [Run], {
    description: 'Forks and retrains of this run (a retrain’s config has retrainOf), oldest first.',
  })
  async children(@Parent() run: Run, @Context('loaders') loaders: RunLoaders): Promise<Run[]> {
    return (await loaders.children.load(run.id)).map(toRun);
  }

  @ResolveField(() => Float, {
    nullable: true,
    description: 'Training success of the last iteration that logged successRate.',
  })
  async lastTrainingSuccess(
    @Parent() run: Run,
    @Context('loaders') loaders: RunLoaders,
  ): Promise<number | null> {
    return (await loaders.latest.load(run.id)).training;
  }

  @ResolveField(() => Float, {
    nullable: true,
    description: 'Held-out success of the last evaluation.',
  })
  async lastEvaluationSuccess(
    @Parent() run: Run,
    @Context('loaders') loaders: RunLoaders,
  ): Promise<number | null> {
    return (await loaders.latest.load(run.id)).evaluation;
  }

  @ResolveField(() => Int, {
    description:
      'How many iterations hold rollouts: the iterations it trained on (a fork counts its own, from its fork point; `lastIteration` also counts events such as the checkpoint after the last one).',
  })
  async iterationCount(
    @Parent() run: Run,
    @Context('loaders') loaders: RunLoaders,
  ): Promise<number> {
    return (await loaders.latest.load(run.id)).rolloutIterations;
  }

  @Query(() => Run, { nullable: true, description: 'A run; null if absent or in another project.' })
  @Requires('read')
  run(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
    @Context('reader') reader: Reader,
  ): Promise<Run | null> {
    return this.queries.get(reader, caller, id);
  }

  @ResolveField(() => [Iteration], {
    description: 'Iterations with rollouts, metrics or evaluations, in order.',
  })
  iterations(@Parent() run: Run, @Context('loaders') loaders: RunLoaders): Promise<Iteration[]> {
    return loaders.iterations.load(run.id);
  }

  @ResolveField(() => RunEventConnection, {
    description: 'The run’s event stream in seq order (first ≤ 1000).',
  })
  async events(
    @Parent() run: Run,
    @Context('loaders') loaders: RunLoaders,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
    @Args('types', { type: () => [EventType], nullable: true }) types: EventType[] | undefined,
    @Args('first', { type: () => Int, nullable: true }) first: number | undefined,
  ): Promise<RunEventConnection> {
    const limit = pageSize(first, 100, 1000, 'events');
    const rows = await loaders.events.load({
      runId: run.id,
      afterSeq: after ? decodeCursor(after, 'events', SEQ_CURSOR)[0] : 0,
      types: types?.length ? types : null,
      limit: limit + 1,
    });
    return toPage(rows, limit, (e) => encodeCursor([e.seq]));
  }

  @Mutation(() => Run, {
    description:
      'Creates a run (same as POST /v1/runs); with an `id` already used for the same input, returns that run.',
  })
  @Requires('write')
  async createRun(
    @Caller() caller: Principal,
    @Args('input', { type: () => CreateRunInput }) input: CreateRunInput,
    @Context('reader') reader: Reader,
  ): Promise<Run> {
    const { id } = await this.runService.create(stripNulls(input), caller);
    return (await this.queries.get(reader, caller, id)) as Run;
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
    @Context('reader') reader: Reader,
  ): Promise<Run | null> {
    await this.scope.assertRun(caller, runId);
    await this.runService.finish(runId, status, summary);
    return this.queries.get(reader, caller, runId);
  }
}

/** GraphQL passes absent optional inputs as undefined but explicit nulls as null; the run schema wants them absent. */
function stripNulls(input: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined));
}
