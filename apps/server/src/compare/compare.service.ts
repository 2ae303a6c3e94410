import { Inject, Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { DomainError, ErrorCode } from '../errors/domain-error';
import {
  AdvantageSetsService,
  type AdvantageSet,
  type IterationAdvantages,
  type MethodRequest,
  type SetStorage,
} from '../advantages/advantage-sets.service';
import type { TrajectoryShape } from '../advantages/iteration-reader';

/** Where a step sits: enough to name it and to fetch its texts. */
export interface StepRef {
  iteration: number;
  groupId: string;
  trajectoryId: string;
  stepIndex: number;
  outcome: string;
  /** The trajectory's place in its iteration (the key of its steps). */
  groupOrd: number;
  trajOrd: number;
}

export interface StepText {
  state: string;
  action: string;
  reward: number;
}

export interface MethodComparison {
  set: AdvantageSet;
  /** The method's own batch facts, pooled over iterations (singleton, gate-on and λ rates, cluster counts). */
  rates: Record<string, unknown>;
}

export interface Comparison {
  runId: string;
  iterations: number[];
  stepCount: number;
  methods: MethodComparison[];
  /** advantages[m][k]: method m, global step k (iterations concatenated in canonical order). */
  advantages: Float32Array[];
  steps: StepRef[];
  /** Task group of each step: index into `groups`. */
  groupOf: Int32Array;
  groups: { iteration: number; groupId: string; steps: number }[];
  /** Per step: 1 if its trajectory succeeded. */
  succeeded: Uint8Array;
  episodeBaseline: Float32Array;
}

const EPISODE_BASELINE: MethodRequest = { name: 'grpo' };
/** A listed `iterations` argument this long is a mistake or an attack; omit it to mean all. */
const MAX_LISTED_ITERATIONS = 100_000;

/**
 * Side-by-side statistics of several estimators on the same stored rollouts.
 * Missing advantage sets are computed on the way (and kept); everything else
 * is arithmetic over the stored float32 arrays.
 */
@Injectable()
export class CompareService {
  constructor(
    @Inject(Database) private readonly db: Database,
    @Inject(AdvantageSetsService) private readonly sets: AdvantageSetsService,
  ) {}

  resolve(method: MethodRequest) {
    return this.sets.resolve(method);
  }

  async compare(
    runId: string,
    methods: MethodRequest[],
    iterations: number[] | undefined,
    storage: SetStorage,
  ): Promise<Comparison> {
    if (methods.length < 1 || methods.length > 12) {
      throw new DomainError(
        ErrorCode.InvalidInput,
        `compare takes 1 to 12 methods, got ${methods.length}`,
      );
    }
    if (iterations && iterations.length > MAX_LISTED_ITERATIONS)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `iterations: at most ${MAX_LISTED_ITERATIONS} entries (omit it for every iteration), got ${iterations.length}`,
      );
    const resolvedSets = await Promise.all(
      methods.map((m) => this.sets.openSet(runId, m, storage)),
    );
    const baselineSet = await this.sets.openSet(runId, EPISODE_BASELINE, storage);
    const known = (await this.sets.iterationsOf(runId)).all;
    // Each iteration once, in order, whatever the list repeats.
    const its = iterations ? [...new Set(iterations)].sort((a, b) => a - b) : known;
    if (its.length === 0)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `run ${runId} has no rollouts yet: there is nothing to compare`,
      );
    const missing = its.filter((i) => !known.includes(i));
    if (missing.length)
      throw new DomainError(
        ErrorCode.InvalidInput,
        `run ${runId} has no rollouts in iteration ${missing.join(', ')}`,
      );

    const sets = [...resolvedSets, baselineSet];
    const perIteration: IterationAdvantages[][] = [];
    for (const i of its) perIteration.push(await this.sets.sameVersion(sets, i));
    const shapes = perIteration.map((versions) => (versions[0] as IterationAdvantages).shape);
    const stepCount = perIteration.reduce((n, v) => n + (v[0] as IterationAdvantages).stepCount, 0);
    const concat = (m: number) => {
      const out = new Float32Array(stepCount);
      let at = 0;
      for (const versions of perIteration) {
        const it = versions[m] as IterationAdvantages;
        out.set(it.advantages, at);
        at += it.stepCount;
      }
      return out;
    };
    const values = sets.map((_, m) => concat(m));
    return {
      runId,
      iterations: its,
      stepCount,
      methods: resolvedSets.map((set, m) => ({
        set,
        rates: poolRates(perIteration.map((v) => v[m] as IterationAdvantages)),
      })),
      advantages: values.slice(0, resolvedSets.length),
      ...stepRefs(its, shapes),
      episodeBaseline: values[resolvedSets.length] as Float32Array,
    };
  }

  /**
   * A per-step reference value the steps carry in their `extra` under `field` (the trainer logs the exact
   * `trueAdvantage` on tiny tasks), in the comparison's step order; NaN where a step has none.
   */
  async referenceValues(comparison: Comparison, field: string): Promise<Float64Array> {
    const out = new Float64Array(comparison.stepCount).fill(NaN);
    const position = new Map<string, number>();
    comparison.steps.forEach((s, k) =>
      position.set(stepKey(s.iteration, s.groupOrd, s.trajOrd, s.stepIndex), k),
    );
    if (position.size === 0) return out;
    const res = await this.db.pool.query<{
      iteration: number;
      group_ord: number;
      traj_ord: number;
      idx: number;
      v: number;
    }>(
      // From the slices that have extras, unnesting only those: the steps view would unnest every field
      // of every slice (embeddings too) to find the few steps with the field.
      `SELECT s.iteration, s.group_ord, s.traj_ord, s.first_idx + (u.k - 1)::int AS idx,
              (u.extra->>$3)::float8 AS v
       FROM step_slices s CROSS JOIN LATERAL unnest(s.extra) WITH ORDINALITY AS u(extra, k)
       WHERE s.run_id = $1 AND s.iteration = ANY($2::int[]) AND s.extra IS NOT NULL
         AND jsonb_typeof(u.extra->$3) = 'number'`,
      [comparison.runId, comparison.iterations, field],
    );
    for (const r of res.rows) {
      const k = position.get(stepKey(r.iteration, r.group_ord, r.traj_ord, r.idx));
      if (k !== undefined) out[k] = r.v; // a step that arrived after the comparison was read is not in it
    }
    return out;
  }

  /** Texts and rewards of the given steps, one statement. */
  async stepTexts(runId: string, refs: StepRef[]): Promise<StepText[]> {
    if (refs.length === 0) return [];
    const res = await this.db.pool.query<{
      n: string;
      state: string;
      action: string;
      reward: number;
    }>(
      // Each step by its slice: the slice that starts at or before it, one index probe per step (the
      // same for its texts). Through the steps view, every slice of each listed step's trajectory was
      // unnested whole, and a plan the planner may pick for a run growing fast scanned far more: a
      // compare on a run in training was seen running for minutes.
      `SELECT k.n, sl.reward[k.idx - sl.first_idx + 1] AS reward,
              (SELECT text FROM texts WHERE run_id = $1 AND id = sl.state_id[k.idx - sl.first_idx + 1]) AS state,
              (SELECT text FROM texts WHERE run_id = $1 AND id = sl.action_id[k.idx - sl.first_idx + 1]) AS action
       FROM unnest($2::int[], $3::int[], $4::int[], $5::int[]) WITH ORDINALITY AS k(iteration, group_ord, traj_ord, idx, n)
       CROSS JOIN LATERAL (
         SELECT s.first_idx, s.state_id, s.action_id, s.reward FROM step_slices s
         WHERE s.run_id = $1 AND s.iteration = k.iteration AND s.group_ord = k.group_ord
           AND s.traj_ord = k.traj_ord AND s.first_idx <= k.idx
         ORDER BY s.first_idx DESC LIMIT 1) sl`,
      [
        runId,
        refs.map((r) => r.iteration),
        refs.map((r) => r.groupOrd),
        refs.map((r) => r.trajOrd),
        refs.map((r) => r.stepIndex),
      ],
    );
    const out = new Array<StepText>(refs.length);
    for (const r of res.rows)
      out[Number(r.n) - 1] = { state: r.state, action: r.action, reward: r.reward };
    return out;
  }
}

const stepKey = (iteration: number, groupOrd: number, trajOrd: number, idx: number) =>
  `${iteration}/${groupOrd}/${trajOrd}/${idx}`;

/** Pools per-iteration summaries: counts add up, histograms add element-wise, rates and means are step-weighted. */
function poolRates(
  items: { stepCount: number; summary: Record<string, unknown> }[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const total = items.reduce((n, i) => n + i.stepCount, 0) || 1;
  for (const { stepCount, summary } of items) {
    for (const [key, value] of Object.entries(summary)) {
      if (Array.isArray(value)) {
        const acc = (out[key] as number[] | undefined) ?? value.map(() => 0);
        out[key] = acc.map((a, j) => a + ((value[j] as number) ?? 0));
      } else if (typeof value === 'number') {
        const prev = (out[key] as number | undefined) ?? 0;
        out[key] = key.endsWith('Max')
          ? Math.max(prev, value)
          : prev + (key.endsWith('Count') ? value : (value * stepCount) / total);
      } else if (typeof value === 'boolean') {
        out[key] = ((out[key] as boolean | undefined) ?? true) && value;
      }
    }
  }
  return out;
}

function stepRefs(iterations: number[], shapes: TrajectoryShape[][]) {
  const steps: StepRef[] = [];
  const groups: { iteration: number; groupId: string; steps: number }[] = [];
  const groupOfList: number[] = [];
  iterations.forEach((iteration, n) => {
    for (const t of shapes[n] as TrajectoryShape[]) {
      const last = groups[groups.length - 1];
      if (!last || last.iteration !== iteration || last.groupId !== t.groupId)
        groups.push({ iteration, groupId: t.groupId, steps: 0 });
      const g = groups.length - 1;
      (groups[g] as { steps: number }).steps += t.length;
      for (let j = 0; j < t.length; j++) {
        steps.push({
          iteration,
          groupId: t.groupId,
          trajectoryId: t.trajectoryId,
          stepIndex: j,
          outcome: t.outcome,
          groupOrd: t.groupOrd,
          trajOrd: t.trajOrd,
        });
        groupOfList.push(g);
      }
    }
  });
  const succeeded = Uint8Array.from(steps, (st) => (st.outcome === 'success' ? 1 : 0));
  return { steps, groups, groupOf: Int32Array.from(groupOfList), succeeded };
}
