import { Inject } from '@nestjs/common';
import { Field, Float, Int, ObjectType, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import { CheckpointsService } from './checkpoints.service';
import { Run } from '../runs/run.models';

@ObjectType({
  description: 'A policy checkpoint: the weights after `iteration` iterations of training.',
})
export class Checkpoint {
  @Field(() => Int) iteration!: number;
  @Field() format!: string;
  @Field({ description: 'SHA-256 of the bytes, hex.' }) sha256!: string;
  @Field(() => Float, {
    description: 'Its size (a Float: a checkpoint in a bucket may pass 2^31).',
  })
  bytes!: number;
  @Field() createdAt!: Date;
  @Field({ description: 'GET it (with a key) for the bytes.' }) path!: string;
  @Field(() => String, {
    nullable: true,
    description:
      'The object holding its bytes (s3://bucket/key) when they are in a bucket (CREDITLAB_CHECKPOINT_BUCKET); null when they are in the database. Either way `path` serves them.',
  })
  objectUrl!: string | null;
}

@Resolver(() => Run)
export class RunCheckpointsResolver {
  constructor(@Inject(CheckpointsService) private readonly store: CheckpointsService) {}

  @ResolveField(() => [Checkpoint], {
    description: 'Checkpoints uploaded for this run, by iteration.',
  })
  checkpoints(@Parent() run: Run): Promise<Checkpoint[]> {
    return this.store.list(run.id);
  }
}
