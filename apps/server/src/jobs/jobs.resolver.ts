import { Inject } from '@nestjs/common';
import { Args, ID, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { MethodInput } from '../advantages/advantages.models';
import { toRequest } from '../advantages/method-requests';
import { Run, RunProgress } from '../runs/run.models';
import { RecomputeJobView } from './job.models';
import { RecomputeService, type RecomputeJob } from './recompute.service';

/** A run's recompute jobs, as a field of the run. */
@Resolver(() => Run)
export class RunJobsResolver {
  constructor(@Inject(RecomputeService) private readonly recomputes: RecomputeService) {}

  @ResolveField(() => [RecomputeJobView], {
    description: 'Recompute jobs of this run, newest first.',
  })
  async jobs(@Parent() run: Run): Promise<RecomputeJobView[]> {
    return (await this.recomputes.jobsOf(run.id)).map(toJobModel);
  }
}

/** A run's jobs, in each of its progress messages (runProgress). */
@Resolver(() => RunProgress)
export class RunProgressJobsResolver {
  constructor(@Inject(RecomputeService) private readonly recomputes: RecomputeService) {}

  @ResolveField(() => [RecomputeJobView], {
    description: 'The run’s recompute jobs, newest first.',
  })
  async jobs(@Parent() progress: RunProgress): Promise<RecomputeJobView[]> {
    return (await this.recomputes.jobsOf(progress.runId)).map(toJobModel);
  }
}

/** Recompute jobs: queue, follow, cancel. */
@Resolver()
export class JobsResolver {
  constructor(
    @Inject(RecomputeService) private readonly recomputes: RecomputeService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Mutation(() => RecomputeJobView, {
    description:
      'Queues the computation of a method on stored rollouts (default: every complete iteration). Stored iterations are reused.',
  })
  @Requires('write')
  async recompute(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('method', { type: () => MethodInput }) method: MethodInput,
    @Args('iterations', { type: () => [Int], nullable: true }) iterations: number[] | undefined,
  ): Promise<RecomputeJobView> {
    await this.scope.assertRun(caller, runId);
    return toJobModel(
      await this.recomputes.request(runId, toRequest(method), iterations ?? undefined),
    );
  }

  @Mutation(() => RecomputeJobView, {
    nullable: true,
    description: 'Cancels a queued or running job (between iterations).',
  })
  @Requires('write')
  async cancelJob(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobView | null> {
    if (!(await this.visibleJob(caller, id))) return null;
    const job = await this.recomputes.cancel(id);
    return job ? toJobModel(job) : null;
  }

  @Query(() => RecomputeJobView, {
    nullable: true,
    description: 'A recompute job: status and progress (poll it).',
  })
  @Requires('read')
  async job(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobView | null> {
    const job = await this.visibleJob(caller, id);
    return job ? toJobModel(job) : null;
  }

  @Query(() => [RecomputeJobView], {
    description:
      'The recompute jobs of a run, newest first (empty for a run the key does not see).',
  })
  @Requires('read')
  async jobs(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
  ): Promise<RecomputeJobView[]> {
    if (!(await this.scope.canSeeRun(caller, runId))) return [];
    return (await this.recomputes.jobsOf(runId)).map(toJobModel);
  }

  /** A job of a run the caller sees; a job of another project is null, like one that does not exist. */
  private async visibleJob(caller: Principal, id: string): Promise<RecomputeJob | null> {
    const job = await this.recomputes.get(id);
    return job && (await this.scope.canSeeRun(caller, job.runId)) ? job : null;
  }
}

function toJobModel(job: RecomputeJob): RecomputeJobView {
  const total = job.iterations.length;
  return {
    id: job.id,
    advantageSetId: job.setId,
    runId: job.runId,
    iterations: job.iterations,
    status: job.status,
    done: job.done,
    total,
    progress: total ? job.done / total : 1,
    error: job.error,
    createdAt: job.createdAt,
    finishedAt: job.finishedAt,
  };
}
