import { Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { PageInfo } from '../graphql/page-info.model';

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
