/** The shapes the app reads from the GraphQL API (a subset of schema.gql). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface RunRow {
  id: string;
  name: string;
  project: string;
  env: string;
  method: string;
  status: string;
  lastIteration: number | null;
  createdAt: string;
  tags: string[];
  parentRunId: string | null;
  lastTrainingSuccess?: number | null;
  lastEvaluationSuccess?: number | null;
  /** Iterations that hold rollouts (absent from servers before it). */
  iterationCount?: number;
}

export interface Iteration {
  index: number;
  groupCount: number;
  trajectoryCount: number;
  stepCount: number;
  metrics: Record<string, number>;
  evaluationSuccessRate: number | null;
}

export interface RunDetail extends RunRow {
  params: Record<string, Json>;
  config: Record<string, Json>;
  seed: number | null;
  forkIteration: number | null;
  finishedAt: string | null;
  lastSeq: number;
  summary: Json;
  iterations: Iteration[];
  checkpoints: {
    iteration: number;
    bytes: number;
    sha256: string;
    format: string;
    createdAt: string;
    path: string;
    /** Set when its bytes are in the server's bucket (absent from servers before it). */
    objectUrl?: string | null;
  }[];
  children?: RunRow[];
  /** The run it was forked or retrained from (absent from servers before it; null if none). */
  parent?: Pick<RunRow, 'id' | 'name' | 'method'> | null;
}

export interface Job {
  id: string;
  runId: string;
  advantageSetId: string;
  status: string;
  done: number;
  total: number;
  progress: number;
  error: string | null;
  iterations: number[];
  createdAt: string;
  finishedAt: string | null;
}

export interface MethodInput {
  name: string;
  params?: Record<string, Json>;
}

export interface EstimatorParam {
  name: string;
  type: string;
  default: Json;
  allowed: string;
  description: string;
}

export interface Estimator {
  name: string;
  version: string;
  description: string;
  paper: string;
  requires: string[];
  params: EstimatorParam[];
  diagnostics: { name: string; kind: string; description: string }[];
}

export interface RunEvent {
  seq: number;
  id: string;
  type: string;
  iteration: number | null;
  recordedAt: string;
  stepCount: number;
  data: Json;
}

export interface Page<T> {
  nodes: T[];
  pageInfo: { endCursor: string | null; hasNextPage: boolean };
  totalCount?: number | null;
}

/** Statuses compare case-insensitively: older servers say "running", newer ones RUNNING. */
export const isStatus = (status: string, want: string) =>
  status.toLowerCase() === want.toLowerCase();
