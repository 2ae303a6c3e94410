import { Inject } from '@nestjs/common';
import {
  Args,
  Context,
  Float,
  ID,
  Int,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { MethodInput } from '../advantages/advantages.models';
import { countMethod, storageOf, toRequest } from '../advantages/method-requests';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { density, histogram } from '@creditlab/stats';
import {
  AgainstReference,
  Comparison,
  ComparisonIntervals,
  Density,
  Histogram,
  MethodComparisonView,
  MethodPair,
  StepAdvantagesConnection,
} from './compare.models';
import { CompareService } from './compare.service';
import { ComparisonReport, type ComparisonReportObject } from './comparison-report';

/** The data behind a Comparison object, kept for its paginated `rows`. */

@Resolver(() => Comparison)
export class CompareResolver {
  constructor(
    @Inject(CompareService) private readonly compareService: CompareService,
    @Inject(ComparisonReport) private readonly report: ComparisonReport,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Query(() => Comparison, {
    description:
      'Several methods side by side on the same stored rollouts (sets computed as needed).',
    // Estimator work: priced per method compared.
    complexity: ({ args, childComplexity }) =>
      1000 * (Array.isArray(args.methods) ? args.methods.length : 1) + childComplexity,
  })
  @Requires('read')
  async compare(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('methods', { type: () => [MethodInput] }) methods: MethodInput[],
    @Args('iterations', { type: () => [Int], nullable: true }) iterations: number[] | undefined,
    @Args('disagreements', {
      type: () => Int,
      defaultValue: 10,
      description: 'Steps listed per pair.',
    })
    disagreements: number,
    @Args('examples', {
      type: () => Int,
      defaultValue: 10,
      description: 'Examples listed per method against the episode sign.',
    })
    examples: number,
    @Context() ctx: Record<string, unknown>,
  ): Promise<ComparisonReportObject> {
    await this.scope.assertRun(caller, runId);
    for (const [name, n] of [
      ['disagreements', disagreements],
      ['examples', examples],
    ] as const)
      if (n < 0 || n > 100)
        throw new DomainError(ErrorCode.InvalidInput, `${name}: from 0 to 100, got ${n}`, {
          path: name,
        });
    const requests = methods.map(toRequest);
    for (const m of requests) {
      const r = this.compareService.resolve(m);
      countMethod(ctx, r.method, r.params);
    }
    const data = await this.compareService.compare(
      runId,
      requests,
      iterations ?? undefined,
      storageOf(caller),
    );
    return this.report.build(data, disagreements, examples);
  }

  @ResolveField(() => StepAdvantagesConnection, {
    description: 'Per-step rows with every method’s advantage, in canonical order (first ≤ 1000).',
  })
  rows(
    @Parent() comparison: ComparisonReportObject,
    @Args('first', { type: () => Int, defaultValue: 100 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
  ): Promise<StepAdvantagesConnection> {
    return this.report.rows(comparison, first, after);
  }

  @ResolveField(() => [AgainstReference], {
    description:
      "Each method against a per-step reference value in the steps' extra fields, by default the exact `trueAdvantage` the trainer logs on tiny tasks: how well each estimator recovers the truth. Empty when no step carries the field.",
  })
  againstReference(
    @Parent() comparison: ComparisonReportObject,
    @Args('field', { defaultValue: 'trueAdvantage' }) field: string,
  ): Promise<AgainstReference[]> {
    return this.report.againstReference(comparison, field);
  }

  @ResolveField(() => ComparisonIntervals, {
    description:
      'Bootstrap confidence intervals for every pair score, every score against the reference field and every difference of two methods against it, resampling task groups. Computed only when asked for (cost grows with resamples × groups).',
    complexity: ({ args }) => Math.ceil((Number(args.resamples) || 1000) / 10),
  })
  intervals(
    @Parent() comparison: ComparisonReportObject,
    @Args('resamples', { type: () => Int, defaultValue: 1000 }) resamples: number,
    @Args('level', { type: () => Float, defaultValue: 0.95 }) level: number,
    @Args('seed', { type: () => Int, defaultValue: 1, description: 'Same seed, same intervals.' })
    seed: number,
    @Args('field', { defaultValue: 'trueAdvantage' }) field: string,
  ): Promise<ComparisonIntervals> {
    return this.report.intervals(comparison, field, { resamples, level, seed });
  }
}

/** Per method: its advantages binned. */
@Resolver(() => MethodComparisonView)
export class MethodComparisonResolver {
  @ResolveField(() => Histogram, { description: 'The method’s advantages in equal-width bins.' })
  histogram(
    @Parent() m: MethodComparisonView,
    @Args('bins', { type: () => Int, defaultValue: 40 }) bins: number,
  ): Histogram {
    return histogram(m.values, checkBins(bins, 200));
  }
}

/** Per pair: the scatter of the two methods' advantages, binned. */
@Resolver(() => MethodPair)
export class MethodPairResolver {
  @ResolveField(() => Density, {
    description: 'The scatter of the pair’s advantages as a grid of counts (every step counted).',
  })
  density(
    @Parent() pair: MethodPair,
    @Args('bins', { type: () => Int, defaultValue: 60 }) bins: number,
  ): Density {
    return density(pair.x, pair.y, checkBins(bins, 200));
  }
}

function checkBins(bins: number, max: number): number {
  if (!Number.isInteger(bins) || bins < 1 || bins > max)
    throw new DomainError(ErrorCode.InvalidInput, `bins: an integer from 1 to ${max}, got ${bins}`);
  return bins;
}
