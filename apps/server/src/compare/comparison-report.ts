import { Inject, Injectable } from '@nestjs/common';
import { DomainError, ErrorCode } from '../errors/domain-error';
import { outcomeCredit, topK } from '@creditlab/stats';
import {
  agreementOf,
  comparisonIntervals,
  prepareLayout,
  rankSeries,
  subsetLayout,
  type IntervalOptions,
  type StepLayout,
} from './comparison-agreement';
import { decodeCursor, encodeCursor, POSITION_CURSOR } from '../graphql/pagination';
import type {
  AgainstReference,
  Comparison,
  ComparisonIntervals,
  CreditAgainstEpisode,
  MethodPair,
  StepAdvantages,
  StepAdvantagesConnection,
} from './compare.models';
import { summarize } from './advantage-summary';
import { CompareService, type Comparison as ComparisonData, type StepRef } from './compare.service';

/**
 * Standardised gaps at or under this are rounding, not disagreement: advantages are float32, so one
 * method that is another rescaled (RLOO is GRPO's mean-centred advantage × G/(G−1)) meets it only to
 * about 1e-7 once both are standardised.
 */
const AGREE = 1e-5;

/** A comparison as the API shows it, with the data behind it (for its paginated rows). */
export type ComparisonReportObject = Comparison & { data: ComparisonData };

/**
 * What `compare` reports about several methods' advantages on the same steps: per-method summaries,
 * pairwise agreement (pooled, within task groups, by sign where both are nonzero; by position and by
 * iteration) with the steps they disagree on most, credit against the trajectory's outcome, agreement
 * with a reference the steps carry, bootstrap intervals on demand, and the per-step rows.
 */
@Injectable()
export class ComparisonReport {
  constructor(@Inject(CompareService) private readonly compareService: CompareService) {}

  /** The summary, pairs and credit against the episode sign, with `disagreements` and `examples` steps listed. */
  async build(
    data: ComparisonData,
    disagreements: number,
    examples: number,
  ): Promise<ComparisonReportObject> {
    const names = data.methods.map((m, i) => label(m.set.method, i, data));
    const layout = prepareLayout(layoutOf(data));
    const ranked = data.advantages.map((values) => rankSeries(values, layout));
    const z = data.advantages.map(standardise);
    // Choose every listed step first, then fetch all their texts with one statement.
    const pairPicks: { a: number; b: number; positions: number[] }[] = [];
    for (let a = 0; a < data.advantages.length; a++) {
      for (let b = a + 1; b < data.advantages.length; b++) {
        const za = z[a] as Float64Array;
        const zb = z[b] as Float64Array;
        const gap = (k: number) => Math.abs((za[k] as number) - (zb[k] as number));
        // A step where the standardised values meet is no disagreement: two methods that agree
        // everywhere (the same method twice, or one a rescaling of the other) list none.
        pairPicks.push({
          a,
          b,
          positions: topK(data.stepCount, disagreements, gap).filter((k) => gap(k) > AGREE),
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
      aIndex: a,
      bIndex: b,
      ...agreementOf(ranked[a]!, ranked[b]!, layout),
      disagreements: positions.map(rowsOf),
      x: data.advantages[a] as Float32Array,
      y: data.advantages[b] as Float32Array,
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
        summary: summarize(data.advantages[i] as Float32Array, ranked[i]!.sorted),
        rates: m.rates,
        values: data.advantages[i] as Float32Array,
      })),
      pairs,
      againstEpisode,
      data,
    };
  }

  /** Per-step rows in canonical order, a page of at most 1000 after a cursor. */
  async rows(
    comparison: ComparisonReportObject,
    first: number,
    after: string | undefined,
  ): Promise<StepAdvantagesConnection> {
    if (first < 1 || first > 1000)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `rows: first must be an integer from 1 to 1000, got ${first}`,
      );
    const from = after ? decodeCursor(after, 'rows', POSITION_CURSOR)[0] + 1 : 0;
    const total = comparison.data.stepCount;
    const to = Math.min(total, from + first);
    const positions = Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
    const nodes = positions.map(await this.rowMaker(comparison.data, positions));
    return {
      nodes,
      pageInfo: { endCursor: to > from ? encodeCursor([to - 1]) : null, hasNextPage: to < total },
      totalCount: total,
    };
  }

  /** Each method against a per-step reference value the steps carry in their extra fields. */
  async againstReference(
    comparison: ComparisonReportObject,
    field: string,
  ): Promise<AgainstReference[]> {
    const data = comparison.data;
    const reference = await this.compareService.referenceValues(data, field);
    const keep: number[] = [];
    reference.forEach((v, k) => {
      if (!Number.isNaN(v)) keep.push(k);
    });
    if (keep.length === 0) return [];
    const layout = prepareLayout(subsetLayout(layoutOf(data), keep));
    const truth = rankSeries(
      Float64Array.from(keep, (k) => reference[k] as number),
      layout,
    );
    return data.advantages.map((adv, m) => {
      const mine = Float64Array.from(keep, (k) => adv[k] as number);
      return {
        method: comparison.methods[m]!.method,
        methodIndex: m,
        field,
        steps: keep.length,
        ...agreementOf(rankSeries(mine, layout), truth, layout),
      };
    });
  }

  /** Bootstrap intervals for every score (task groups resampled), computed when asked for. */
  async intervals(
    comparison: ComparisonReportObject,
    field: string,
    options: IntervalOptions,
  ): Promise<ComparisonIntervals> {
    if (
      !Number.isInteger(options.resamples) ||
      options.resamples < 100 ||
      options.resamples > 10_000
    )
      throw new DomainError(
        ErrorCode.InvalidInput,
        `intervals: resamples must be an integer from 100 to 10000, got ${options.resamples}`,
      );
    if (!(options.level > 0 && options.level < 1))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `intervals: level must lie strictly between 0 and 1, got ${options.level}`,
      );
    const data = comparison.data;
    const reference = await this.compareService.referenceValues(data, field);
    const keep: number[] = [];
    reference.forEach((v, k) => {
      if (!Number.isNaN(v)) keep.push(k);
    });
    return comparisonIntervals(
      data.advantages.map((values, m) => ({ name: comparison.methods[m]!.method, values })),
      layoutOf(data),
      { field, values: Float64Array.from(keep, (k) => reference[k] as number), keep },
      options,
    );
  }

  /** Credit against the trajectory's outcome, the groups where it happens, and the largest such steps. */
  private against(data: ComparisonData, m: number, name: string, examples: number) {
    const adv = data.advantages[m] as Float32Array;
    const ep = data.episodeBaseline;
    const perGroup = new Int32Array(data.groups.length);
    const hits: number[] = [];
    let againstGrpoSign = 0;
    for (let k = 0; k < adv.length; k++) {
      const a = adv[k] as number;
      const e = ep[k] as number;
      if (a !== 0 && e !== 0 && a > 0 !== e > 0) againstGrpoSign++;
      if (data.succeeded[k] ? a < 0 : a > 0) {
        const g = data.groupOf[k] as number;
        perGroup[g] = (perGroup[g] as number) + 1;
        hits.push(k);
      }
    }
    const credit = outcomeCredit(adv, data.succeeded);
    return {
      method: name,
      methodIndex: m,
      against: credit.goodInFailed + credit.badInSucceeded,
      ...credit,
      againstGrpoSign,
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
        outcome: ref.outcome,
        state: text.state,
        action: text.action,
        reward: text.reward,
        advantages: data.advantages.map((a) => a[k] as number),
      };
    };
  }
}

function layoutOf(data: ComparisonData): StepLayout {
  const stepIndex = new Int32Array(data.steps.length);
  const iteration = new Int32Array(data.steps.length);
  data.steps.forEach((st, k) => {
    stepIndex[k] = st.stepIndex;
    iteration[k] = st.iteration;
  });
  return { groupOf: data.groupOf, stepIndex, iteration };
}

/** A method's name, with its index when the same method is compared under several parameter sets. */
function label(method: string, i: number, data: ComparisonData): string {
  return data.methods.filter((m) => m.set.method === method).length > 1 ? `${method}#${i}` : method;
}

function standardise(x: Float32Array): Float64Array {
  const n = x.length;
  let s = 0;
  for (let k = 0; k < n; k++) s += x[k] as number;
  const m = s / (n || 1);
  let ss = 0;
  for (let k = 0; k < n; k++) ss += ((x[k] as number) - m) ** 2;
  const sd = Math.sqrt(ss / (n || 1)) || 1;
  const z = new Float64Array(n);
  for (let k = 0; k < n; k++) z[k] = ((x[k] as number) - m) / sd;
  return z;
}
