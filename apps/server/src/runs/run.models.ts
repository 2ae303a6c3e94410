import { Field, Float, ID, InputType, Int, ObjectType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { EventType, RunSort, RunStatus } from '../graphql/enums';
import { PageInfo } from '../graphql/page-info.model';

export { RunFinishStatus } from '../graphql/enums';

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
  @Field(() => RunStatus) status!: RunStatus;
  @Field(() => Int, { description: 'Sequence number of the last event of the stream.' })
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
  /** Counts the runs matching the filter over every page; run only when `totalCount` is asked. */
  countMatching!: () => Promise<number>;
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
  @Field(() => Int) seq!: number;
  @Field(() => ID) id!: string;
  @Field(() => EventType) type!: EventType;
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
  @Field({ nullable: true, description: 'The method the run trains with.' }) method?: string;
  @Field(() => [String], { nullable: true, description: 'Any of these methods.' })
  methods?: string[];
  @Field(() => [RunStatus], { nullable: true, description: 'Any of these statuses.' })
  status?: RunStatus[];
  @Field(() => [String], { nullable: true, description: 'Runs carrying all of these tags.' })
  tags?: string[];
  @Field({ nullable: true, description: 'Runs whose name contains this (any case).' })
  nameContains?: string;
  @Field(() => Date, { nullable: true, description: 'Created at or after.' }) createdAfter?: Date;
  @Field(() => Date, { nullable: true, description: 'Created before.' }) createdBefore?: Date;
  @Field(() => ID, { nullable: true, description: 'Forks and retrains of this run.' })
  parentRunId?: string;
  @Field({
    nullable: true,
    description:
      'Runs whose id starts with this (hex digits, hyphens where the id has them; any case), as the short ids the web app and logs show.',
  })
  idPrefix?: string;
}

export { RunSort };

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

@ObjectType({ description: 'One value of a metric at one iteration.' })
export class SeriesPoint {
  @Field(() => Int) iteration!: number;
  @Field(() => Float) value!: number;
}

@ObjectType({ description: 'A metric over iterations.' })
export class MetricSeries {
  @Field({
    description:
      'The metric logged (metrics.logged), or evaluation.successRate for held-out success (evaluation.logged).',
  })
  name!: string;
  @Field(() => [SeriesPoint]) points!: SeriesPoint[];
}

@ObjectType({ description: "A run's metrics as series, for plotting several runs at once." })
export class RunSeries {
  @Field(() => ID) runId!: string;
  @Field() runName!: string;
  @Field(() => [MetricSeries]) series!: MetricSeries[];
}

@ObjectType({ description: 'Where a run stands now: sent on every change to it (runProgress).' })
export class RunProgress {
  @Field(() => ID) runId!: string;
  @Field(() => RunStatus) status!: RunStatus;
  @Field(() => Int) lastSeq!: number;
  @Field(() => Int, { nullable: true }) lastIteration!: number | null;
}
