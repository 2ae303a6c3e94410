import { Field, Float, ID, Int, ObjectType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';
import { PageInfo } from '../graphql/page-info.model';

/** The description of a field that points into a comparison's `methods`. */
const METHOD_INDEX = (side: string) =>
  `Position of ${side} in \`methods\` (the order the methods were asked in), which tells apart one method compared under several parameter sets`;

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

@ObjectType('MethodComparison')
export class MethodComparisonView {
  @Field() method!: string;
  @Field(() => GraphQLJSON) params!: unknown;
  @Field(() => ID, {
    nullable: true,
    description:
      'The stored set compared; null when it has no row: computed for this request only (a read key, non-default parameters), or nothing of it computed.',
  })
  advantageSetId!: string | null;
  @Field(() => AdvantageSummary) summary!: AdvantageSummary;
  @Field(() => GraphQLJSON, {
    description:
      'Method-specific rates pooled over iterations: singletonRate, gateOnRate, lambdaMean and lambdaHistogram, clusterCount, ...',
  })
  rates!: unknown;
  /** The method's advantages over the compared steps (for histogram). */
  values!: Float32Array;
}

@ObjectType()
export class StepAdvantages {
  @Field(() => Int) iteration!: number;
  @Field() groupId!: string;
  @Field() trajectoryId!: string;
  @Field(() => Int) stepIndex!: number;
  @Field({ description: "The trajectory's outcome: success, failure or truncated." })
  outcome!: string;
  @Field() state!: string;
  @Field() action!: string;
  @Field(() => Float) reward!: number;
  @Field(() => [Float], { description: 'One per compared method, in the order asked.' })
  advantages!: number[];
}

@ObjectType({
  description:
    'Agreement of two per-step series on a slice of the steps (a step position, an iteration).',
})
export class AgreementSlice {
  @Field({ description: 'e.g. "step 0", "step 10+", "iteration 3".' }) slice!: string;
  @Field(() => Int) steps!: number;
  @Field(() => Float, { nullable: true }) pearson!: number | null;
  @Field(() => Float, { nullable: true, description: 'Over steps where both are nonzero.' })
  signAgreement!: number | null;
}

/** Agreement fields shared by a pair of methods and a method against a reference. */
@ObjectType({ isAbstract: true })
export class Agreement {
  @Field(() => Float, { nullable: true, description: 'Pooled over every step compared.' })
  pearson!: number | null;
  @Field(() => Float, { nullable: true, description: 'Pooled over every step compared.' })
  spearman!: number | null;
  @Field(() => Float, {
    nullable: true,
    description:
      'Mean over task groups of the within-group Pearson correlation (groups where it is undefined left out): agreement with the task held fixed.',
  })
  groupPearson!: number | null;
  @Field(() => Float, { nullable: true, description: 'The same with Spearman correlations.' })
  groupSpearman!: number | null;
  @Field(() => Int, { description: 'Groups whose within-group correlation is defined.' })
  groupsCorrelated!: number;
  @Field(() => Float, {
    nullable: true,
    description:
      'Fraction of the steps where both values are nonzero whose signs agree; null when there are none. A zero carries no sign.',
  })
  signAgreement!: number | null;
  @Field(() => Int, { description: 'Steps where both values are nonzero.' }) bothNonzero!: number;
  @Field(() => Float, { description: 'Fraction of steps where the first value is exactly 0.' })
  zeroFractionA!: number;
  @Field(() => Float, {
    description:
      'Fraction of steps where the second value (the other method, or the reference) is 0.',
  })
  zeroFractionB!: number;
  @Field(() => [AgreementSlice], {
    description: 'By step position within the trajectory (0 … 9, then 10+).',
  })
  byPosition!: AgreementSlice[];
  @Field(() => [AgreementSlice], { description: 'By iteration.' }) byIteration!: AgreementSlice[];
}

@ObjectType()
export class MethodPair extends Agreement {
  @Field() a!: string;
  @Field() b!: string;
  @Field(() => Int, { description: METHOD_INDEX('the first method') }) aIndex!: number;
  @Field(() => Int, { description: METHOD_INDEX('the second method') }) bIndex!: number;
  @Field(() => [StepAdvantages], {
    description:
      'Steps where the two disagree most (largest gap between their standardised advantages); steps where they meet are left out, so two that agree everywhere list none.',
  })
  disagreements!: StepAdvantages[];
  /** The two methods' advantages over the compared steps (for density). */
  x!: Float32Array;
  y!: Float32Array;
}

@ObjectType()
export class GroupCredit {
  @Field(() => Int) iteration!: number;
  @Field() groupId!: string;
  @Field(() => Int) steps!: number;
  @Field(() => Int, {
    description: "Steps whose credit points against their trajectory's outcome.",
  })
  against!: number;
}

@ObjectType({
  description:
    "Where a method's credit points against its trajectory's outcome: a good step in a failed episode, a bad one in a successful episode.",
})
export class CreditAgainstEpisode {
  @Field() method!: string;
  @Field(() => Int, { description: METHOD_INDEX('the method') }) methodIndex!: number;
  @Field(() => Int, { description: 'goodInFailed + badInSucceeded.' }) against!: number;
  @Field(() => Int, {
    description: 'Positive advantage in a trajectory that did not succeed (failure or truncated).',
  })
  goodInFailed!: number;
  @Field(() => Int, { description: 'Negative advantage in a trajectory that succeeded.' })
  badInSucceeded!: number;
  @Field(() => Int) stepsInFailed!: number;
  @Field(() => Int) stepsInSucceeded!: number;
  @Field(() => Int, {
    description:
      "Steps whose nonzero advantage has the opposite sign of GRPO's (nonzero) episode-level advantage: the GRPO-sign variant.",
  })
  againstGrpoSign!: number;
  @Field(() => [GroupCredit], { description: 'Groups with at least one such step, most first.' })
  byGroup!: GroupCredit[];
  @Field(() => [StepAdvantages], { description: 'The largest such steps.' })
  examples!: StepAdvantages[];
}

@ObjectType()
export class StepAdvantagesConnection {
  @Field(() => [StepAdvantages]) nodes!: StepAdvantages[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  @Field(() => Int, { description: 'Steps compared, over every page.' }) totalCount!: number;
}

@ObjectType({ description: 'Counts of values in equal-width bins (binned on the server).' })
export class Histogram {
  @Field(() => [Float], { description: 'bins + 1 edges, from the smallest value to the largest.' })
  edges!: number[];
  @Field(() => [Int]) counts!: number[];
}

@ObjectType({
  description:
    'A scatter of two methods’ advantages as counts in a grid of equal-width bins (every step counted, binned on the server).',
})
export class Density {
  @Field(() => [Float], { description: 'Edges along the first method (x).' }) xEdges!: number[];
  @Field(() => [Float], { description: 'Edges along the second method (y).' }) yEdges!: number[];
  @Field(() => [Int], { description: 'Row-major counts: y outer, x inner.' }) counts!: number[];
  @Field(() => Int) total!: number;
}

@ObjectType({
  description:
    "A method's advantages against a reference the steps carry (e.g. the exact trueAdvantage): scale-free agreement.",
})
export class AgainstReference extends Agreement {
  @Field() method!: string;
  @Field(() => Int, { description: METHOD_INDEX('the method') }) methodIndex!: number;
  @Field({ description: 'The step field compared with.' }) field!: string;
  @Field(() => Int, { description: 'Steps that carry the field (the others are left out).' })
  steps!: number;
}

@ObjectType({ description: 'An estimate with a percentile bootstrap interval (groups resampled).' })
export class Interval {
  @Field(() => Float, { nullable: true }) estimate!: number | null;
  @Field(() => Float, { nullable: true }) low!: number | null;
  @Field(() => Float, { nullable: true }) high!: number | null;
}

/** The agreement scores (libs/stats AGREEMENT_SCORES), each as an interval (shared by the types below). */
@ObjectType({ isAbstract: true })
export class ScoreIntervals {
  @Field(() => Interval) pearson!: Interval;
  @Field(() => Interval) spearman!: Interval;
  @Field(() => Interval) groupPearson!: Interval;
  @Field(() => Interval) groupSpearman!: Interval;
  @Field(() => Interval) signAgreement!: Interval;
}

@ObjectType({ description: 'Intervals of the agreement scores of two series.' })
export class AgreementIntervals extends ScoreIntervals {
  @Field() a!: string;
  @Field({ description: 'The other method, or the reference field.' }) b!: string;
  @Field(() => Int, { description: METHOD_INDEX('the first method') }) aIndex!: number;
  @Field(() => Int, {
    nullable: true,
    description: `${METHOD_INDEX('the other method')}; null when b is the reference field.`,
  })
  bIndex!: number | null;
}

@ObjectType({
  description:
    "The difference of two methods' scores against the reference (a − b), on the same resamples.",
})
export class ReferenceDifference extends ScoreIntervals {
  @Field() a!: string;
  @Field() b!: string;
  @Field(() => Int, { description: METHOD_INDEX('the first method') }) aIndex!: number;
  @Field(() => Int, { description: METHOD_INDEX('the second method') }) bIndex!: number;
}

@ObjectType({
  description:
    'Bootstrap confidence intervals for every score, resampling task groups (the steps of a group share a task and rollouts, so groups are the unit).',
})
export class ComparisonIntervals {
  @Field(() => Int) resamples!: number;
  @Field(() => Float) level!: number;
  @Field(() => Int) seed!: number;
  @Field(() => Int, { description: 'Task groups resampled.' }) groups!: number;
  @Field(() => [AgreementIntervals]) pairs!: AgreementIntervals[];
  @Field(() => [AgreementIntervals], {
    description: 'Each method against the reference field (empty when no step carries it).',
  })
  againstReference!: AgreementIntervals[];
  @Field(() => [ReferenceDifference], {
    description: "Every pair of methods' difference against the reference.",
  })
  referenceDifferences!: ReferenceDifference[];
}

@ObjectType({ description: 'Several estimators on the same stored rollouts.' })
export class Comparison {
  @Field(() => ID) runId!: string;
  @Field(() => [Int]) iterations!: number[];
  @Field(() => Int) stepCount!: number;
  @Field(() => [MethodComparisonView]) methods!: MethodComparisonView[];
  @Field(() => [MethodPair]) pairs!: MethodPair[];
  @Field(() => [CreditAgainstEpisode]) againstEpisode!: CreditAgainstEpisode[];
}
