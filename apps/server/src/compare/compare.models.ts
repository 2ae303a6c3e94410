import { Field, Float, ID, Int, ObjectType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';

@ObjectType()
export class AdvantageSummary {
  @Field(() => Float) mean!: number;
  @Field(() => Float) std!: number;
  @Field(() => Float) min!: number;
  @Field(() => Float) max!: number;
  @Field(() => Float) p05!: number;
  @Field(() => Float) p25!: number;
  @Field(() => Float) p50!: number;
  @Field(() => Float) p75!: number;
  @Field(() => Float) p95!: number;
  @Field(() => Float) fractionPositive!: number;
  @Field(() => Float) fractionZero!: number;
}

@ObjectType()
export class MethodComparisonModel {
  @Field() method!: string;
  @Field(() => GraphQLJSON) params!: unknown;
  @Field(() => ID, {
    nullable: true,
    description:
      'The stored set compared; null when computed for this request only (a read key, non-default parameters).',
  })
  advantageSetId!: string | null;
  @Field(() => AdvantageSummary) summary!: AdvantageSummary;
  @Field(() => GraphQLJSON, {
    description:
      'Method-specific rates pooled over iterations: singletonRate, gateOnRate, lambdaMean and lambdaHistogram, clusterCount, ...',
  })
  rates!: unknown;
}

@ObjectType()
export class StepAdvantages {
  @Field(() => Int) iteration!: number;
  @Field() groupId!: string;
  @Field() trajectoryId!: string;
  @Field(() => Int) stepIndex!: number;
  @Field() state!: string;
  @Field() action!: string;
  @Field(() => Float) reward!: number;
  @Field(() => [Float], { description: 'One per compared method, in the order asked.' })
  advantages!: number[];
}

@ObjectType()
export class MethodPair {
  @Field() a!: string;
  @Field() b!: string;
  @Field(() => Float, { nullable: true }) pearson!: number | null;
  @Field(() => Float, { nullable: true }) spearman!: number | null;
  @Field(() => Float, { description: 'Fraction of steps whose advantages have the same sign.' })
  signAgreement!: number;
  @Field(() => [StepAdvantages], {
    description:
      'Steps where the two disagree most (largest gap between their standardised advantages).',
  })
  disagreements!: StepAdvantages[];
}

@ObjectType()
export class GroupCredit {
  @Field(() => Int) iteration!: number;
  @Field() groupId!: string;
  @Field(() => Int) steps!: number;
  @Field(() => Int, { description: 'Steps whose sign differs from the episode-level (GRPO) sign.' })
  against!: number;
}

@ObjectType({
  description: 'Where a step-level method moves credit against the episode-level sign.',
})
export class CreditAgainstEpisode {
  @Field() method!: string;
  @Field(() => Int) against!: number;
  @Field(() => Int, {
    description: 'Positive advantage in a trajectory the episode term scores negative.',
  })
  goodInFailed!: number;
  @Field(() => Int, {
    description: 'Negative advantage in a trajectory the episode term scores positive.',
  })
  badInSucceeded!: number;
  @Field(() => [GroupCredit], { description: 'Groups with at least one such step, most first.' })
  byGroup!: GroupCredit[];
  @Field(() => [StepAdvantages], { description: 'The largest such steps.' })
  examples!: StepAdvantages[];
}

@ObjectType()
export class StepAdvantagesConnection {
  @Field(() => [StepAdvantages]) nodes!: StepAdvantages[];
  @Field(() => String, { nullable: true }) endCursor!: string | null;
  @Field() hasNextPage!: boolean;
}

@ObjectType({
  description:
    "A method's advantages against a reference the steps carry (e.g. the exact trueAdvantage): scale-free agreement.",
})
export class AgainstReference {
  @Field() method!: string;
  @Field({ description: 'The step field compared with.' }) field!: string;
  @Field(() => Int, { description: 'Steps that carry the field (the others are left out).' })
  steps!: number;
  @Field(() => Float, { nullable: true }) pearson!: number | null;
  @Field(() => Float, { nullable: true }) spearman!: number | null;
  @Field(() => Float, { description: 'Fraction of steps where both have the same sign.' })
  signAgreement!: number;
}

@ObjectType({ description: 'Several estimators on the same stored rollouts.' })
export class Comparison {
  @Field(() => ID) runId!: string;
  @Field(() => [Int]) iterations!: number[];
  @Field(() => Int) stepCount!: number;
  @Field(() => [MethodComparisonModel]) methods!: MethodComparisonModel[];
  @Field(() => [MethodPair]) pairs!: MethodPair[];
  @Field(() => [CreditAgainstEpisode]) againstEpisode!: CreditAgainstEpisode[];
}
