import { Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';

@ObjectType({ description: 'Cursor pagination state of a connection.' })
export class PageInfo {
  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page.' })
  endCursor!: string | null;
  @Field()
  hasNextPage!: boolean;
}

@ObjectType({ description: 'One training run: one event stream.' })
export class Run {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field() project!: string;
  @Field({ description: 'Environment the rollouts come from.' }) env!: string;
  @Field({ description: 'Estimator the run trains with.' }) method!: string;
  @Field(() => GraphQLJSON, { description: "The training method's parameters." }) params!: unknown;
  @Field(() => GraphQLJSON) config!: unknown;
  @Field(() => Float, { nullable: true }) seed!: number | null;
  @Field(() => [String]) tags!: string[];
  @Field({ description: 'running, completed, failed or aborted.' }) status!: string;
  @Field(() => Float, { description: 'Sequence number of the last event of the stream.' })
  lastSeq!: number;
  @Field(() => Int, { nullable: true }) lastIteration!: number | null;
  @Field(() => ID, { nullable: true }) parentRunId!: string | null;
  @Field(() => Int, { nullable: true }) forkIteration!: number | null;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
  @Field(() => GraphQLJSON, { nullable: true, description: 'Summary sent with run.finished.' })
  summary!: unknown;
}

@ObjectType()
export class RunConnection {
  @Field(() => [Run]) nodes!: Run[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@ObjectType({ description: 'What one iteration of a run holds.' })
export class Iteration {
  @Field(() => Int) index!: number;
  @Field(() => Int) groupCount!: number;
  @Field(() => Int) trajectoryCount!: number;
  @Field(() => Int) stepCount!: number;
  @Field(() => GraphQLJSON, {
    description: 'Metric name → last value logged for this iteration (metrics.logged).',
  })
  metrics!: Record<string, number>;
  @Field(() => Float, {
    nullable: true,
    description: 'Held-out success rate (evaluation.logged), if any.',
  })
  evaluationSuccessRate!: number | null;
}

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
  /** Index of its first step in the iteration's canonical order. */
  offset!: number;
  @Field({ description: 'The trajectory id as sent.' }) id!: string;
  @Field({
    description: 'success, failure or truncated; when not sent, success iff the return is > 0.',
  })
  outcome!: string;
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
  @Field(() => Float, { description: 'Sequence number of the event that carried the step.' })
  seq!: number;
}

@ObjectType()
export class RunEvent {
  @Field(() => Float) seq!: number;
  @Field(() => ID) id!: string;
  @Field() type!: string;
  @Field(() => Int, { nullable: true }) iteration!: number | null;
  @Field(() => GraphQLJSON, {
    description: 'Payload; for step-bearing events the steps are under the run’s groups.',
  })
  data!: unknown;
  @Field(() => Int) stepCount!: number;
  @Field() recordedAt!: Date;
}

@ObjectType()
export class RunEventConnection {
  @Field(() => [RunEvent]) nodes!: RunEvent[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@ObjectType()
export class AppendEventsResult {
  @Field(() => Int) accepted!: number;
  @Field(() => Int, {
    description: 'Events whose id was already stored (or repeated): acknowledged, stored once.',
  })
  duplicates!: number;
  @Field(() => Float) lastSeq!: number;
}

@InputType()
export class RunFilter {
  @Field({ nullable: true }) project?: string;
  @Field({ nullable: true }) env?: string;
  @Field({ nullable: true }) method?: string;
  @Field({ nullable: true }) status?: string;
  @Field(() => [String], { nullable: true, description: 'Runs carrying all of these tags.' })
  tags?: string[];
}

@InputType()
export class CreateRunInput {
  @Field(() => ID, {
    nullable: true,
    description:
      'A UUID the client chooses: the same id and input again return that run; the same id with other input is a CONFLICT.',
  })
  id?: string;
  @Field() name!: string;
  @Field({ nullable: true }) project?: string;
  @Field() env!: string;
  @Field() method!: string;
  @Field(() => GraphQLJSON, { nullable: true }) params?: Record<string, unknown>;
  @Field(() => GraphQLJSON, { nullable: true }) config?: Record<string, unknown>;
  @Field(() => Float, { nullable: true }) seed?: number;
  @Field(() => [String], { nullable: true }) tags?: string[];
  @Field(() => ID, { nullable: true }) parentRunId?: string;
  @Field(() => Int, { nullable: true }) forkIteration?: number;
}

export const RunFinishStatus = {
  completed: 'completed',
  failed: 'failed',
  aborted: 'aborted',
} as const;
export type RunFinishStatus = (typeof RunFinishStatus)[keyof typeof RunFinishStatus];
registerEnumType(RunFinishStatus, {
  name: 'RunFinishStatus',
  description: 'How a run ended, as its run.finished event says.',
});
