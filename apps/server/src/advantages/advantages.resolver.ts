import { registryAsJson } from '@creditlab/estimators';
import { Inject } from '@nestjs/common';
import { Args, Context, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import DataLoader from 'dataloader';
import GraphQLJSON from 'graphql-type-json';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { Requires } from '../access/requires.decorator';
import { Step } from '../rollouts/rollout.models';
import { Run } from '../runs/run.models';
import { diagnosticValue } from './advantage-codec';
import {
  AdvantageSetsService,
  type AdvantageSet,
  type IterationAdvantages,
  type MethodRequest,
} from './advantage-sets.service';
import { AdvantageSetView, Estimator, MethodInput } from './advantages.models';
import { countMethod, storageOf, toRequest } from './method-requests';

type AdvantageLoader = DataLoader<
  { runId: string; iteration: number; method: MethodRequest },
  IterationAdvantages,
  string
>;

/** The estimators' registry. */
@Resolver()
export class AdvantagesResolver {
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
}

@Resolver(() => Run)
export class RunAdvantagesResolver {
  constructor(@Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService) {}

  @ResolveField(() => [AdvantageSetView], { description: 'Advantage sets computed on this run.' })
  async advantageSets(@Parent() run: Run): Promise<AdvantageSetView[]> {
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
    const it = await this.loader(ctx, caller, 'advantages').load({
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
    const it = await this.loader(ctx, caller, 'diagnostics').load({
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

  /**
   * One (run, iteration, method) read per request, shared by every step that asks; advantages and
   * diagnostics apart, since a version a job stored has no diagnostics until someone asks for them.
   */
  private loader(
    ctx: Record<string, unknown>,
    caller: Principal,
    what: 'advantages' | 'diagnostics',
  ): AdvantageLoader {
    const loaders = (ctx.advantageLoaders ??= {}) as Partial<Record<typeof what, AdvantageLoader>>;
    return (loaders[what] ??= new DataLoader<
      { runId: string; iteration: number; method: MethodRequest },
      IterationAdvantages,
      string
    >(
      async (keys) =>
        Promise.all(
          keys.map(async (k) =>
            this.sets.iteration(await this.openSet(ctx, caller, k), k.iteration, {
              diagnostics: what === 'diagnostics',
            }),
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

  /** The set a request names, opened once per request whatever the iterations and fields that ask. */
  private openSet(
    ctx: Record<string, unknown>,
    caller: Principal,
    k: { runId: string; method: MethodRequest },
  ): Promise<AdvantageSet> {
    const sets = (ctx.advantageSets ??= new Map()) as Map<string, Promise<AdvantageSet>>;
    const { method, params } = this.sets.resolve(k.method);
    const key = JSON.stringify([k.runId, method, params]);
    let set = sets.get(key);
    if (!set) {
      set = this.sets.openSet(k.runId, k.method, storageOf(caller));
      sets.set(key, set);
    }
    return set;
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
