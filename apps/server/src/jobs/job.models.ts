import { Field, Float, ID, Int, ObjectType } from '@nestjs/graphql';
import { JobStatus } from '../graphql/enums';

@ObjectType('RecomputeJob', {
  description:
    'A recompute job; follow it with `job(id)`, `jobs(runId)` or the `runProgress` subscription.',
})
export class RecomputeJobView {
  @Field(() => ID) id!: string;
  @Field(() => ID) advantageSetId!: string;
  @Field(() => ID) runId!: string;
  @Field(() => [Int]) iterations!: number[];
  @Field(() => JobStatus) status!: JobStatus;
  @Field(() => Int, { description: 'Iterations whose advantages are stored and fresh.' })
  done!: number;
  @Field(() => Int) total!: number;
  @Field(() => Float, { description: 'done / total.' }) progress!: number;
  @Field(() => String, { nullable: true, description: 'Why it failed.' }) error!: string | null;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}
