import { Inject } from '@nestjs/common';
import { Args, ID, Resolver, Subscription } from '@nestjs/graphql';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { RunProgress } from './run.models';
import { RunProgressService } from './run-progress.service';

/** Live updates of a run, over graphql-ws (the key in connection_init). */
@Resolver()
export class RunProgressResolver {
  constructor(
    @Inject(RunProgressService) private readonly progress: RunProgressService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Subscription(() => RunProgress, {
    description:
      'The run’s state now, then after every event appended to it and every change of one of its recompute jobs (from any server process). A run the key does not see is NOT_FOUND.',
    resolve: (progress: RunProgress) => progress,
  })
  @Requires('read')
  async runProgress(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
  ): Promise<AsyncIterator<RunProgress>> {
    await this.scope.assertRun(caller, runId);
    return this.progress.follow(runId);
  }
}
