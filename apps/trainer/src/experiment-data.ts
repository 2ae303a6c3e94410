import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One finished training run of an experiment, as kept in its data file. */
export interface RunRecord {
  method: string;
  /** Trained on per-batch whitened advantages (the scale control arm). */
  whiten: boolean;
  seed: number;
  runId: string;
  /** Held-out success at each evaluation: [iteration + 1, success]. */
  curve: [number, number][];
  /** Per iteration: training success, the RMS of the nonzero advantages received, the value loss. */
  successRate: number[];
  advantageRms: number[];
  valueLoss: number[];
  /** Per iteration, on this run's own rollouts: GiGPO's singleton rate and Gated-BEPO's gate-on rate. */
  singletonRate: number[];
  gateOnRate: number[];
  seconds: number;
  cpuSeconds: number;
}

export interface ExperimentData {
  env: string;
  runs: RunRecord[];
  /** Scores against the exact advantages, when a truth run was made. */
  truth?: { runId: string; rows: unknown[] };
  /** The machine (with its load) and the day when the last run was saved. */
  machine?: string;
}

export const runKey = (r: Pick<RunRecord, 'method' | 'whiten' | 'seed'>): string =>
  `${r.method}${r.whiten ? '+whiten' : ''}/${r.seed}`;

/** The experiment's data so far (empty if the file does not exist): a re-run skips what is there. */
export function loadData(file: string, env: string): ExperimentData {
  if (!existsSync(file)) return { env, runs: [] };
  const data = JSON.parse(readFileSync(file, 'utf8')) as ExperimentData;
  if (data.env !== env) throw new Error(`${file} holds ${data.env}, not ${env}`);
  return data;
}

/** Written to a temporary file and renamed: an interrupted write never leaves a broken file. */
export function saveData(file: string, data: ExperimentData): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 1)}\n`);
  renameSync(tmp, file);
}
