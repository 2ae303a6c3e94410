import { Inject } from '@nestjs/common';
import {
  Args,
  Context,
  ID,
  Info,
  Int,
  Mutation,
  Parent,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import GraphQLJSON from 'graphql-type-json';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { DomainError, ErrorCode } from '../errors/domain-error';
import {
  decodeCursor,
  encodeCursor,
  pageSize,
  POSITION_CURSOR,
  toPage,
} from '../graphql/pagination';
import { selectsField } from '../graphql/selects-field';
import { ParseIterationPipe } from '../http/parse-iteration.pipe';
import { Run } from '../runs/run.models';
import { EventAppender } from './event-appender.service';
import { EVENTS_LIST } from './event-origin';
import type { RolloutLoaders } from './rollout-loaders';
import {
  AppendEventsResult,
  RolloutGroup,
  RolloutGroupConnection,
  Step,
  Trajectory,
} from './rollout.models';

/** A run's rollouts, iteration by iteration: task groups, their trajectories, their steps. */
@Resolver(() => Run)
export class RunRolloutsResolver {
  @ResolveField(() => RolloutGroupConnection, {
    description: 'Task groups of one iteration in canonical order (first ≤ 100).',
  })
  async groups(
    @Parent() run: Run,
    @Context('loaders') loaders: RolloutLoaders,
    @Args('iteration', { type: () => Int }, ParseIterationPipe) iteration: number,
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
    return toPage(rows, limit, (g) => encodeCursor([g.position]));
  }

  @ResolveField(() => RolloutGroup, {
    nullable: true,
    description: 'A task group of one iteration by its id (as sent).',
  })
  async group(
    @Parent() run: Run,
    @Context('loaders') loaders: RolloutLoaders,
    @Args('iteration', { type: () => Int }, ParseIterationPipe) iteration: number,
    @Args('id') id: string,
  ): Promise<RolloutGroup | null> {
    return (await loaders.groupByKey.load({ runId: run.id, iteration, key: id })) ?? null;
  }

  @ResolveField(() => Trajectory, {
    nullable: true,
    description: 'A trajectory of one iteration by its id (as sent).',
  })
  async trajectory(
    @Parent() run: Run,
    @Context('loaders') loaders: RolloutLoaders,
    @Args('iteration', { type: () => Int }, ParseIterationPipe) iteration: number,
    @Args('id') id: string,
  ): Promise<Trajectory | null> {
    return (await loaders.trajectoryByKey.load({ runId: run.id, iteration, key: id })) ?? null;
  }
}

@Resolver(() => RolloutGroup)
export class RolloutGroupResolver {
  @ResolveField(() => [Trajectory], {
    description: 'The group’s trajectories in order of first appearance.',
  })
  trajectories(
    @Parent() group: RolloutGroup,
    @Context('loaders') loaders: RolloutLoaders,
  ): Promise<Trajectory[]> {
    return loaders.trajectories.load(group);
  }
}

@Resolver(() => Trajectory)
export class TrajectoryResolver {
  @ResolveField(() => [Step], { description: 'The trajectory’s steps by index.' })
  async steps(
    @Parent() trajectory: Trajectory,
    @Context('loaders') loaders: RolloutLoaders,
    @Info() info: GraphQLResolveInfo,
  ): Promise<Step[]> {
    // Embeddings may live in the event log's bodies, a read per step: fetched only when selected.
    const loader = selectsField(info, 'embedding') ? loaders.stepsWithEmbeddings : loaders.steps;
    return loader.load(trajectory);
  }
}

/** Events over GraphQL, for small volumes (NDJSON over HTTP for the rest). */
@Resolver()
export class EventsResolver {
  constructor(
    @Inject(EventAppender) private readonly appender: EventAppender,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

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
    return this.appender.append(runId, source(), EVENTS_LIST);
  }
}
