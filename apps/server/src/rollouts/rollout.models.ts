import { Field, Float, Int, ObjectType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { TrajectoryOutcome } from '../graphql/enums';
import { PageInfo } from '../graphql/page-info.model';

@ObjectType({ description: 'A task group: the G trajectories sampled for one task.' })
export class RolloutGroup {
  runId!: string;
  @Field({ description: 'The group id as sent (groups[].id).' }) id!: string;
  @Field(() => Int) iteration!: number;
  @Field(() => Int, { description: 'Position in the iteration (order of first appearance).' })
  position!: number;
}

@ObjectType()
export class RolloutGroupConnection {
  @Field(() => [RolloutGroup]) nodes!: RolloutGroup[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@ObjectType()
export class Trajectory {
  runId!: string;
  iteration!: number;
  /** Its group's position in the iteration, and its own in the group (the steps' key). */
  groupPosition!: number;
  position!: number;
  @Field({ description: 'The trajectory id as sent.' }) id!: string;
  @Field(() => TrajectoryOutcome, {
    description: 'As sent; when not sent, SUCCESS iff the return is > 0.',
  })
  outcome!: TrajectoryOutcome;
  @Field({ description: 'Whether the outcome was sent (true) or derived from the return.' })
  outcomeGiven!: boolean;
  @Field(() => Float, { description: 'Undiscounted return Σ reward.' }) return!: number;
  @Field(() => Int) length!: number;
}

@ObjectType({
  description:
    'One step, every field of rollout-batch/v1. Texts and scalars are exactly as ingested; embedding and tokenLogprobs are stored as float32, so they come back at float32 precision.',
})
export class Step {
  runId!: string;
  iteration!: number;
  /** Its trajectory's id: with `index`, where its advantage sits in any version of an advantage set. */
  trajectoryId!: string;
  @Field(() => Int) index!: number;
  @Field() state!: string;
  @Field() action!: string;
  @Field(() => Float) reward!: number;
  @Field(() => Float, { nullable: true }) nll!: number | null;
  @Field(() => [Float], { nullable: true, description: 'float32 precision.' }) tokenLogprobs!:
    number[] | null;
  @Field(() => [Float], { nullable: true, description: 'float32 precision.' }) embedding!:
    number[] | null;
  @Field(() => Float, { nullable: true }) value!: number | null;
  @Field(() => String, { nullable: true }) nextState!: string | null;
  @Field(() => Float, { nullable: true }) nextValue!: number | null;
  @Field(() => GraphQLJSON, { nullable: true, description: 'Fields sent beyond rollout-batch/v1.' })
  extra!: unknown;
  @Field(() => Int, { description: 'Sequence number of the event that carried the step.' })
  seq!: number;
}

@ObjectType()
export class AppendEventsResult {
  @Field(() => Int) accepted!: number;
  @Field(() => Int, {
    description: 'Events whose id was already stored (or repeated): acknowledged, stored once.',
  })
  duplicates!: number;
  @Field(() => Int) lastSeq!: number;
}
