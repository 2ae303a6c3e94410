import { Inject } from '@nestjs/common';
import { Args, ID, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { MethodInput } from '../advantages/advantages.models';
import { toRequest } from '../advantages/method-requests';
import { RecomputeJobModel } from './job.models';
import { RecomputeService, type RecomputeJob } from './recompute.service';

/** Recompute jobs: queue, follow, cancel. */
@Resolver()
export class JobsResolver {
  constructor(
    @Inject(RecomputeService) private readonly recomputes: RecomputeService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Mutation(() => RecomputeJobModel, {
    description:
      'Queues the computation of a method on stored rollouts (default: every complete iteration). Stored iterations are reused.',
  })
  @Requires('write')
  async recompute(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('method', { type: () => MethodInput }) method: MethodInput,
    @Args('iterations', { type: () => [Int], nullable: true }) iterations: number[] | undefined,
  ): Promise<RecomputeJobModel> {
    await this.scope.assertRun(caller, runId);
    return toJobModel(
      await this.recomputes.request(runId, toRequest(method), iterations ?? undefined),
    );
  }

  @Mutation(() => RecomputeJobModel, {
    nullable: true,
    description: 'Cancels a queued or running job (between iterations).',
  })
  @Requires('write')
  async cancelJob(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobModel | null> {
    if (!(await this.visibleJob(caller, id))) return null;
    const job = await this.recomputes.cancel(id);
    return job ? toJobModel(job) : null;
  }

  @Query(() => RecomputeJobModel, {
    nullable: true,
    description: 'A recompute job: status and progress (poll it).',
  })
  @Requires('read')
  async job(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobModel | null> {
    const job = await this.visibleJob(caller, id);
    return job ? toJobModel(job) : null;
  }

  /** A job of a run the caller sees; a job of another project is null, like one that does not exist. */
  private async visibleJob(caller: Principal, id: string): Promise<RecomputeJob | null> {
    const job = await this.recomputes.get(id);
    return job && (await this.scope.canSeeRun(caller, job.runId)) ? job : null;
  }
}

function toJobModel(job: RecomputeJob): RecomputeJobModel {
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
