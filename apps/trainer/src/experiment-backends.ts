import { CreditlabClient } from '@creditlab/client';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import type { TrainerConfig } from './config';
import { InProcessRuns, type InProcessRun } from './in-process-runs';
import type { TrainerHooks } from './iteration';
import {
  TRUTH_QUERY,
  truthRows,
  truthRowsFromServer,
  type TruthAnswer,
  type TruthRow,
} from './experiment-truth';
import type { TrainingResult } from './training-loop';

/** Where an experiment's runs are trained, and how it reads figures back from them. */
export interface ExperimentBackend {
  train(config: TrainerConfig, hooks: TrainerHooks): Promise<TrainingResult>;
  /** GiGPO's singleton rate and Gated-BEPO's gate-on rate on each iteration of a run. */
  rates(
    runId: string,
    iterations: number,
  ): Promise<{ singletonRate: number[]; gateOnRate: number[] }>;
  /** Every method against the exact advantages the run logged. */
  truth(runId: string, methods: string[]): Promise<TruthRow[]>;
}

/** Runs on a Creditlab server: trained through its API, figures from its `compare`. */
export function serverBackend(url: string, apiKey: string | undefined): ExperimentBackend {
  const client = new CreditlabClient({ url, apiKey });
  return {
    train: async (config, hooks) => (await import('./trainer')).train(config, hooks, apiKey),
    rates: async (runId, iterations) => {
      // The sets first, in one field: fields of one request run concurrently, and concurrent first
      // requests for the same set can fail on the server (its insert-or-select races).
      await client.graphql(
        `query($id: ID!) { compare(runId: $id, methods: [{ name: "gigpo" }, { name: "gated-bepo" }]) { stepCount } }`,
        { id: runId },
      );
      const fields = Array.from(
        { length: iterations },
        (_, i) =>
          `i${i}: compare(runId: $id, methods: [{ name: "gigpo" }, { name: "gated-bepo" }], iterations: [${i}]) { methods { rates } }`,
      );
      const res = await client.graphql<
        Record<string, { methods: { rates: Record<string, number> }[] }>
      >(`query($id: ID!) { ${fields.join('\n')} }`, { id: runId });
      const rate = (m: number, key: string) =>
        Array.from({ length: iterations }, (_, i) => res[`i${i}`]!.methods[m]!.rates[key] ?? NaN);
      return { singletonRate: rate(0, 'singletonRate'), gateOnRate: rate(1, 'gateOnRate') };
    },
    truth: async (runId, methods) =>
      truthRowsFromServer(
        await client.graphql<TruthAnswer>(TRUTH_QUERY, {
          id: runId,
          m: methods.map((name) => ({ name })),
        }),
      ),
  };
}

/**
 * Runs trained in this process with the same loop, the advantages from the estimator library as the
 * server computes them (InProcessRuns): no server to keep alive through hours of runs. A run's
 * rollouts are kept until its figures are read, then dropped.
 */
export function inProcessBackend(): ExperimentBackend {
  const kept = new Map<string, InProcessRun>();
  const batches = (runId: string) => {
    const run = kept.get(runId);
    if (!run) throw new Error(`run ${runId} is not kept`);
    return [...run.iterations.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, groups]) => ({
        groups,
        batch: columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups }),
      }));
  };
  return {
    train: async (config, hooks) => {
      const runs = new InProcessRuns();
      const result = await (await import('./trainer')).trainOn(runs, config, hooks);
      kept.clear();
      kept.set(result.runId, runs.runs.get(result.runId)!);
      return result;
    },
    rates: async (runId) => {
      const per = batches(runId).map(({ batch }) => ({
        singletonRate: estimate(batch, 'gigpo').summary.singletonRate as number,
        gateOnRate: estimate(batch, 'gated-bepo').summary.gateOnRate as number,
      }));
      return {
        singletonRate: per.map((p) => p.singletonRate),
        gateOnRate: per.map((p) => p.gateOnRate),
      };
    },
    truth: async (runId, methods) => {
      const all = batches(runId);
      // steps by task group (a task's rollouts in one iteration), in the batches' order
      const truth: number[] = [];
      const groupOf: number[] = [];
      all
        .flatMap(({ groups }) => groups)
        .forEach((group, g) => {
          for (const t of group.trajectories)
            for (const s of t.steps) {
              truth.push(s.trueAdvantage as number);
              groupOf.push(g);
            }
        });
      return truthRows(
        methods.map((method) => ({
          method,
          advantages: Float64Array.from(
            all.flatMap(({ batch }) => Array.from(estimate(batch, method).advantages)),
          ),
        })),
        truth,
        groupOf,
      );
    },
  };
}
