import { Int, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import { RunConnection } from './run.models';

/** A page of runs; its total is a separate COUNT, so it is computed only for queries that ask. */
@Resolver(() => RunConnection)
export class RunConnectionResolver {
  @ResolveField(() => Int, { description: 'Runs matching the filter, over every page.' })
  totalCount(@Parent() connection: RunConnection): Promise<number> {
    return connection.countMatching();
  }
}
