import { registryAsJson } from '@creditlab/estimators';
import { Inject } from '@nestjs/common';
import {
  Args,
  Context,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import DataLoader from 'dataloader';
import GraphQLJSON from 'graphql-type-json';
import { diagnosticValue } from '../advantages/advantage-codec';
import {
  AdvantageSetsService,
  type IterationAdvantages,
  type MethodRequest,
  type SetStorage,
} from '../advantages/advantage-sets.service';
import {
  CompareService,
  type Comparison as ComparisonData,
  type StepRef,
} from '../advantages/compare.service';
import { pearson, ranks, signAgreement, spearman, topK } from '../advantages/compare-stats';
import { RecomputeService, type RecomputeJob } from '../advantages/recompute.service';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { Caller } from '../access/caller.decorator';
import { hasRole, type Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import {
  AdvantageSetModel,
  AgainstReference,
  Comparison,
  CreditAgainstEpisode,
  Estimator,
  MethodInput,
  MethodPair,
  RecomputeJobModel,
  StepAdvantages,
  StepAdvantagesConnection,
} from './advantages.models';
import { Run, Step } from './models';

type AdvantageLoader = DataLoader<
  { runId: string; iteration: number; method: MethodRequest },
  IterationAdvantages,
  string
>;

/** Advantages under any method: the registry, per-step values, sets, recompute jobs and comparisons. */
@Resolver()
export class AdvantagesResolver {
  constructor(
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
    @Inject(RecomputeService) private readonly recomputes: RecomputeService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
  ) {}

  @Query(() => [Estimator], {
    description: 'Every registered estimator with its parameter schema.',
  })
  @Requires('read')
  estimators(): Estimator[] {
    return registryAsJson().map((m) => ({
      ...m,
      requires: [...m.requires],
      diagnostics: m.diagnostics.map((d) => ({ ...d })),
    }));
  }

  @Mutation(() => RecomputeJobModel, {
    description:
      'Queues the computation of a method on stored rollouts (default: every complete iteration). Stored iterations are reused.',
  })
  @Requires('write')
  async recompute(
    @Caller() caller: Principal,
    @Args('runId', { type: () => ID }) runId: string,
    @Args('method', { type: () => MethodInput }) method: MethodInput,
    @Args('iterations', { type: () => [Int], nullable: true }) iterations: number[] | undefined,
  ): Promise<RecomputeJobModel> {
    await this.scope.assertRun(caller, runId);
    return toJobModel(
      await this.recomputes.request(runId, toRequest(method), iterations ?? undefined),
    );
  }

  @Mutation(() => RecomputeJobModel, {
    nullable: true,
    description: 'Cancels a queued or running job (between iterations).',
  })
  @Requires('write')
  async cancelJob(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobModel | null> {
    if (!(await this.visibleJob(caller, id))) return null;
    const job = await this.recomputes.cancel(id);
    return job ? toJobModel(job) : null;
  }

  @Query(() => RecomputeJobModel, {
    nullable: true,
    description: 'A recompute job: status and progress (poll it).',
  })
  @Requires('read')
  async job(
    @Caller() caller: Principal,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<RecomputeJobModel | null> {
    const job = await this.visibleJob(caller, id);
    return job ? toJobModel(job) : null;
  }

  /** A job of a run the caller sees; a job of another project is null, like one that does not exist. */
  private async visibleJob(caller: Principal, id: string): Promise<RecomputeJob | null> {
    const job = await this.recomputes.get(id);
    return job && (await this.scope.canSeeRun(caller, job.runId)) ? job : null;
  }
}

@Resolver(() => Run)
export class RunAdvantagesResolver {
  constructor(@Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService) {}

  @ResolveField(() => [AdvantageSetModel], { description: 'Advantage sets computed on this run.' })
  async advantageSets(@Parent() run: Run): Promise<AdvantageSetModel[]> {
    return (await this.sets.setsOf(run.id)).map((s) => ({ ...s, params: s.params }));
  }
}

@Resolver(() => Step)
export class StepAdvantagesResolver {
  constructor(@Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService) {}

  @ResolveField(() => Number, {
    description:
      "The step's advantage under a method (float32); computes its iteration's set if needed (stored for writers, and for readers at default parameters).",
    complexity: 1, // per step: aliasing it many times is priced like asking for many steps
  })
  async advantage(
    @Parent() step: Step,
    @Args('method', { type: () => MethodInput }) method: MethodInput,
    @Context() ctx: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<number> {
    const it = await this.loader(ctx, caller).load({
      runId: step.runId,
      iteration: step.iteration,
      method: toRequest(method),
    });
    return it.advantages[positionOf(it, step)] as number;
  }

  @ResolveField(() => GraphQLJSON, {
    description: "The method's per-step diagnostics for this step (float32; null where undefined).",
    complexity: 1,
  })
  async diagnostics(
    @Parent() step: Step,
    @Args('method', { type: () => MethodInput }) method: MethodInput,
    @Context() ctx: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<Record<string, unknown>> {
    const it = await this.loader(ctx, caller).load({
      runId: step.runId,
      iteration: step.iteration,
      method: toRequest(method),
    });
    return Object.fromEntries(
      Object.entries(it.diagnostics).map(([name, d]) => [
        name,
        diagnosticValue(d, positionOf(it, step)),
      ]),
    );
  }

  /** One (run, iteration, method) read per request, shared by every step that asks. */
  private loader(ctx: Record<string, unknown>, caller: Principal): AdvantageLoader {
    const storage = storageOf(caller);
    return (ctx.advantageLoader ??= new DataLoader<
      { runId: string; iteration: number; method: MethodRequest },
      IterationAdvantages,
      string
    >(
      async (keys) =>
        Promise.all(
          keys.map(async (k) =>
            this.sets.iteration(await this.sets.openSet(k.runId, k.method, storage), k.iteration),
          ),
        ),
      {
        cacheKeyFn: (k) => {
          const { method, params } = this.sets.resolve(k.method);
          countMethod(ctx, method, params);
          return JSON.stringify([k.runId, k.iteration, method, params]);
        },
      },
    )) as AdvantageLoader;
  }
}

/** The data behind a Comparison object, kept for its paginated `rows`. */
type ComparisonObject = Comparison & { data: ComparisonData };

@Resolver(() => Comparison)
export class CompareResolver {
  constructor(
    @Inject(CompareService) private readonly compareService: CompareService,
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
  ): Promise<ComparisonObject> {
    await this.scope.assertRun(caller, runId);
    if (disagreements > 100 || examples > 100)
      throw new DomainError(ErrorCode.InvalidInput, 'disagreements and examples: at most 100');
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
    const names = data.methods.map((m, i) => label(m.set.method, i, data));
    const rank = data.advantages.map((a) => ranks(a));
    const z = data.advantages.map(standardise);
    // Choose every listed step first, then fetch all their texts with one statement.
    const pairPicks: { a: number; b: number; positions: number[] }[] = [];
    for (let a = 0; a < data.advantages.length; a++) {
      for (let b = a + 1; b < data.advantages.length; b++) {
        const za = z[a] as Float64Array;
        const zb = z[b] as Float64Array;
        pairPicks.push({
          a,
          b,
          positions: topK(data.stepCount, disagreements, (k) =>
            Math.abs((za[k] as number) - (zb[k] as number)),
          ),
        });
      }
    }
    const against = data.advantages.map((_, m) =>
      this.against(data, m, names[m] as string, examples),
    );
    const rowsOf = await this.rowMaker(data, [
      ...pairPicks.flatMap((p) => p.positions),
      ...against.flatMap((a) => a.positions),
    ]);
    const pairs: MethodPair[] = pairPicks.map(({ a, b, positions }) => ({
      a: names[a] as string,
      b: names[b] as string,
      pearson: pearson(data.advantages[a] as Float32Array, data.advantages[b] as Float32Array),
      spearman: pearson(rank[a] as Float64Array, rank[b] as Float64Array),
      signAgreement: signAgreement(
        data.advantages[a] as Float32Array,
        data.advantages[b] as Float32Array,
      ),
      disagreements: positions.map(rowsOf),
    }));
    const againstEpisode: CreditAgainstEpisode[] = against.map(({ positions, ...rest }) => ({
      ...rest,
      examples: positions.map(rowsOf),
    }));
    return {
      runId: data.runId,
      iterations: data.iterations,
      stepCount: data.stepCount,
      methods: data.methods.map((m, i) => ({
        method: names[i]!,
        params: m.set.params,
        advantageSetId: m.set.id,
        summary: m.summary,
        rates: m.rates,
      })),
      pairs,
      againstEpisode,
      data,
    };
  }

  @ResolveField(() => StepAdvantagesConnection, {
    description: 'Per-step rows with every method’s advantage, in canonical order (first ≤ 1000).',
  })
  async rows(
    @Parent() comparison: ComparisonObject,
    @Args('first', { type: () => Int, defaultValue: 100 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after: string | undefined,
  ): Promise<StepAdvantagesConnection> {
    if (first < 1 || first > 1000)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `rows: first must be an integer from 1 to 1000, got ${first}`,
      );
    if (after && !/^\d{1,10}$/.test(after))
      throw new DomainError(
        ErrorCode.InvalidInput,
        'rows: "after" is not a cursor this API issued',
      );
    const from = after ? Number(after) + 1 : 0;
    const to = Math.min(comparison.data.stepCount, from + first);
    const positions = Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
    const nodes = positions.map(await this.rowMaker(comparison.data, positions));
    return {
      nodes,
      endCursor: to > from ? String(to - 1) : null,
      hasNextPage: to < comparison.data.stepCount,
    };
  }

  @ResolveField(() => [AgainstReference], {
    description:
      "Each method against a per-step reference value in the steps' extra fields, by default the exact `trueAdvantage` the trainer logs on tiny tasks: how well each estimator recovers the truth. Empty when no step carries the field.",
  })
  async againstReference(
    @Parent() comparison: ComparisonObject,
    @Args('field', { defaultValue: 'trueAdvantage' }) field: string,
  ): Promise<AgainstReference[]> {
    const data = comparison.data;
    const reference = await this.compareService.referenceValues(data, field);
    const keep: number[] = [];
    reference.forEach((v, k) => {
      if (!Number.isNaN(v)) keep.push(k);
    });
    if (keep.length === 0) return [];
    const truth = Float64Array.from(keep, (k) => reference[k] as number);
    return data.advantages.map((adv, m) => {
      const mine = Float64Array.from(keep, (k) => adv[k] as number);
      return {
        method: comparison.methods[m]!.method,
        field,
        steps: keep.length,
        pearson: pearson(mine, truth),
        spearman: spearman(mine, truth),
        signAgreement: signAgreement(mine, truth),
      };
    });
  }

  private against(data: ComparisonData, m: number, name: string, examples: number) {
    const adv = data.advantages[m] as Float32Array;
    const ep = data.episodeBaseline;
    let goodInFailed = 0;
    let badInSucceeded = 0;
    const perGroup = new Int32Array(data.groups.length);
    const hits: number[] = [];
    for (let k = 0; k < adv.length; k++) {
      const a = adv[k] as number;
      const e = ep[k] as number;
      if (a > 0 && e < 0) goodInFailed++;
      else if (a < 0 && e > 0) badInSucceeded++;
      else continue;
      const g = data.groupOf[k] as number;
      perGroup[g] = (perGroup[g] as number) + 1;
      hits.push(k);
    }
    return {
      method: name,
      against: goodInFailed + badInSucceeded,
      goodInFailed,
      badInSucceeded,
      byGroup: data.groups
        .map((g, i) => ({
          iteration: g.iteration,
          groupId: g.groupId,
          steps: g.steps,
          against: perGroup[i] as number,
        }))
        .filter((g) => g.against > 0)
        .sort((x, y) => y.against - x.against),
      positions: topK(hits.length, examples, (h) => Math.abs(adv[hits[h] as number] as number)).map(
        (h) => hits[h] as number,
      ),
    };
  }

  /** Fetches the texts of the given steps (one statement) and returns a function that builds their rows. */
  private async rowMaker(
    data: ComparisonData,
    positions: number[],
  ): Promise<(k: number) => StepAdvantages> {
    const unique = [...new Set(positions)];
    const texts = await this.compareService.stepTexts(
      data.runId,
      unique.map((k) => data.steps[k] as StepRef),
    );
    const textOf = new Map(
      unique.map((k, i) => [k, texts[i] as { state: string; action: string; reward: number }]),
    );
    return (k) => {
      const ref = data.steps[k] as StepRef;
      const text = textOf.get(k) as { state: string; action: string; reward: number };
      return {
        iteration: ref.iteration,
        groupId: ref.groupId,
        trajectoryId: ref.trajectoryId,
        stepIndex: ref.stepIndex,
        state: text.state,
        action: text.action,
        reward: text.reward,
        advantages: data.advantages.map((a) => a[k] as number),
      };
    };
  }
}

/** Offset of each trajectory in a version of an iteration, worked out once per version. */
const offsets = new WeakMap<IterationAdvantages, Map<string, number>>();

/**
 * Where a step's value sits in a version of its iteration: found by its trajectory and index, never
 * by a position read elsewhere, so a version computed after more steps arrived still lines up
 * (steps are only ever appended, so the step is in every later version).
 */
function positionOf(it: IterationAdvantages, step: Step): number {
  let byTrajectory = offsets.get(it);
  if (!byTrajectory) {
    byTrajectory = new Map(it.shape.map((t) => [t.trajectoryId, t.offset]));
    offsets.set(it, byTrajectory);
  }
  const offset = byTrajectory.get(step.trajectoryId);
  if (offset === undefined)
    throw new Error(`trajectory ${step.trajectoryId} is not in iteration ${it.iteration}`);
  return offset + step.index;
}

/** Distinct (method, parameters) one GraphQL request may use: each can mean an estimator run per iteration. */
export const MAX_METHODS_PER_REQUEST = 12;

/** Counts a distinct (method, parameters) of this request; past the cap, the request is refused. */
function countMethod(ctx: Record<string, unknown>, method: string, params: unknown): void {
  const seen = (ctx.methodsUsed ??= new Set<string>()) as Set<string>;
  seen.add(JSON.stringify([method, params]));
  if (seen.size > MAX_METHODS_PER_REQUEST)
    throw new DomainError(
      ErrorCode.InvalidInput,
      `a request may use at most ${MAX_METHODS_PER_REQUEST} distinct methods or parameter sets; split it`,
    );
}

/** What a caller's reads may store (see SetStorage): writers anything, readers default sets only. */
function storageOf(caller: Principal): SetStorage {
  return hasRole(caller, 'write') ? 'any' : 'defaults-only';
}

function toRequest(m: MethodInput): MethodRequest {
  return { name: m.name, params: m.params ?? {} };
}

function toJobModel(job: RecomputeJob): RecomputeJobModel {
  const total = job.iterations.length;
  return {
    id: job.id,
    advantageSetId: job.setId,
    runId: job.runId,
    iterations: job.iterations,
    status: job.status,
    done: job.done,
    total,
    progress: total ? job.done / total : 1,
    error: job.error,
    createdAt: job.createdAt,
    finishedAt: job.finishedAt,
  };
}

/** A method's name, with its index when the same method is compared under several parameter sets. */
function label(method: string, i: number, data: ComparisonData): string {
  return data.methods.filter((m) => m.set.method === method).length > 1 ? `${method}#${i}` : method;
}

function standardise(x: Float32Array): Float64Array {
  let s = 0;
  for (const v of x) s += v;
  const m = s / (x.length || 1);
  let ss = 0;
  for (const v of x) ss += (v - m) ** 2;
  const sd = Math.sqrt(ss / (x.length || 1)) || 1;
  return Float64Array.from(x, (v) => (v - m) / sd);
}
