import { Field, Float, ID, Int, ObjectType } from '@nestjs/graphql';

@ObjectType({ description: 'A recompute job; poll `job(id)` for progress.' })
export class RecomputeJobModel {
  @Field(() => ID) id!: string;
  @Field(() => ID) advantageSetId!: string;
  @Field(() => ID) runId!: string;
  @Field(() => [Int]) iterations!: number[];
  @Field({ description: 'queued, running, completed, failed or cancelled.' }) status!: string;
  @Field(() => Int, { description: 'Iterations stored so far.' }) done!: number;
  @Field(() => Int) total!: number;
  @Field(() => Float, { description: 'done / total.' }) progress!: number;
  @Field(() => String, { nullable: true, description: 'Why it failed.' }) error!: string | null;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) finishedAt!: Date | null;
}
