import { Context, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import { RolloutGroup, Step, Trajectory } from './models';
import type { ReadLoaders } from './read-loaders';

@Resolver(() => RolloutGroup)
export class RolloutGroupResolver {
  @ResolveField(() => [Trajectory], {
    description: 'The group’s trajectories in order of first appearance.',
  })
  trajectories(
    @Parent() group: RolloutGroup,
    @Context('loaders') loaders: ReadLoaders,
  ): Promise<Trajectory[]> {
    return loaders.trajectories.load(group);
  }
}

@Resolver(() => Trajectory)
export class TrajectoryResolver {
  @ResolveField(() => [Step], { description: 'The trajectory’s steps by index.' })
  async steps(
    @Parent() trajectory: Trajectory,
    @Context('loaders') loaders: ReadLoaders,
  ): Promise<Step[]> {
    const steps = await loaders.steps.load(trajectory);
    return steps.map((s) => ({
      ...s,
      runId: trajectory.runId,
      iteration: trajectory.iteration,
      trajectoryId: trajectory.id,
    }));
  }
}
