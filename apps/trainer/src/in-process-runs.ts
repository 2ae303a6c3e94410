import { createHash, randomUUID } from 'node:crypto';
import type { AppendSummary, StoredCheckpoint } from '@creditlab/client';
import { columnarBatchFromJson, estimate, ROLLOUT_BATCH_FORMAT } from '@creditlab/estimators';
import {
  validateEvent,
  type ClientEvent,
  type RunInput,
  type StepColumns,
} from '@creditlab/events';
import type { RunSink } from './training-loop';

type WireStep = Record<string, unknown>;
export interface WireGroup {
  id: string;
  trajectories: { id: string; outcome?: string; steps: WireStep[] }[];
}

/** A run as kept in memory: its creation, its iterations' rollouts, its other events and checkpoints. */
export interface InProcessRun {
  input: RunInput;
  iterations: Map<number, WireGroup[]>;
  events: ClientEvent[];
  checkpoints: Map<number, Uint8Array>;
}

/**
 * The calls the training loop makes of Creditlab, answered in this process: rollouts are kept in
 * memory and the advantages come from the estimator library on them, as the server computes them
 * (rollout-batch/v1 through the library's reader, so embeddings are float32, and float32 answers). For
 * the estimator-quality harness, which trains and snapshots policies without a server.
 */
export class InProcessRuns implements RunSink {
  readonly runs = new Map<string, InProcessRun>();

  async createRun(input: RunInput): Promise<{ id: string }> {
    const id = input.id ?? randomUUID();
    this.runs.set(id, { input, iterations: new Map(), events: [], checkpoints: new Map() });
    return { id };
  }

  async appendEvents(
    runId: string,
    events: Iterable<ClientEvent> | AsyncIterable<ClientEvent>,
  ): Promise<AppendSummary> {
    const run = this.run(runId);
    let sent = 0;
    for await (const event of events) {
      sent++;
      if (event.type === 'rollouts.appended') {
        const { iteration, groups } = decoded(event);
        const stored = run.iterations.get(iteration) ?? [];
        run.iterations.set(iteration, stored);
        for (const g of groups) appendGroup(stored, g);
      } else run.events.push(event);
    }
    return { sent, accepted: sent, duplicates: 0, lastSeq: 0, requests: 1, retries: 0 };
  }

  async advantages(
    runId: string,
    iteration: number,
    method: string,
    params: Record<string, unknown> = {},
  ): Promise<{ advantages: Float32Array; advantageSetId: string }> {
    const groups = this.run(runId).iterations.get(iteration);
    if (!groups) throw new Error(`run ${runId} has no rollouts in iteration ${iteration}`);
    const batch = columnarBatchFromJson({ format: ROLLOUT_BATCH_FORMAT, groups });
    return {
      advantages: Float32Array.from(estimate(batch, method, params).advantages),
      advantageSetId: '',
    };
  }

  async uploadCheckpoint(
    runId: string,
    iteration: number,
    data: Uint8Array,
    format: string,
  ): Promise<StoredCheckpoint> {
    this.run(runId).checkpoints.set(iteration, data);
    const sha256 = createHash('sha256').update(data).digest('hex');
    const createdAt = new Date().toISOString();
    return { iteration, format, sha256, bytes: data.length, createdAt, path: '', objectUrl: null };
  }

  private run(runId: string): InProcessRun {
    const run = this.runs.get(runId);
    if (!run) throw new Error(`run ${runId} not found`);
    return run;
  }
}

/** Groups and trajectories merge by id, in order of first appearance, as the server's projections do. */
/**
 * A rollouts event as the server reads it (validated; vectors sent as base64 float32 decoded) in
 * rollout-batch/v1's JSON form, where vectors are arrays of numbers.
 */
function decoded(event: ClientEvent): { iteration: number; groups: WireGroup[] } {
  const valid = validateEvent(event);
  if (!valid.ok) throw new Error(`${valid.issue.path}: ${valid.issue.message}`);
  if (valid.event.type !== 'rollouts.appended') throw new Error(`not rollouts: ${event.type}`);
  if ('columns' in valid.event.data) {
    const { columns } = valid.event.data;
    let from = 0;
    return {
      iteration: valid.event.data.iteration,
      groups: valid.event.data.groups.map((g) => ({
        id: g.id,
        trajectories: g.trajectories.map(({ stepCount, ...t }) => {
          const steps = stepObjects(columns, from, stepCount);
          from += stepCount;
          return { ...t, steps };
        }),
      })),
    };
  }
  return {
    iteration: valid.event.data.iteration,
    groups: valid.event.data.groups.map((g) => ({
      id: g.id,
      trajectories: g.trajectories.map((t) => ({
        ...t,
        steps: t.steps.map((st) => ({
          ...st,
          embedding: st.embedding && Array.from(st.embedding),
          tokenLogprobs: st.tokenLogprobs && Array.from(st.tokenLogprobs),
        })),
      })),
    })),
  };
}

/** Steps `from` to `from + count` of an event's columns as the row form's objects would be. */
function stepObjects(c: StepColumns, from: number, count: number): WireStep[] {
  const steps: WireStep[] = [];
  for (let i = from; i < from + count; i++) {
    const step: WireStep = {
      state: c.texts[c.state[i] as number],
      action: c.texts[c.action[i] as number],
      reward: c.reward[i],
    };
    for (const name of ['nll', 'value', 'nextValue'] as const) {
      const x = c[name]?.[i];
      if (x !== undefined && !Number.isNaN(x)) step[name] = x;
    }
    const next = c.nextState?.[i] ?? -1;
    if (next >= 0) step.nextState = c.texts[next];
    for (const name of ['tokenLogprobs', 'embedding'] as const) {
      const v = c[name]?.[i];
      if (v) step[name] = Array.from(v);
    }
    const extra = c.extra?.[i];
    steps.push(extra ? { ...step, ...(JSON.parse(extra) as WireStep) } : step);
  }
  return steps;
}

function appendGroup(stored: WireGroup[], g: WireGroup): void {
  let group = stored.find((x) => x.id === g.id);
  if (!group) stored.push((group = { id: g.id, trajectories: [] }));
  for (const t of g.trajectories) {
    const known = group.trajectories.find((x) => x.id === t.id);
    if (known) known.steps.push(...t.steps);
    else group.trajectories.push({ ...t, steps: [...t.steps] });
  }
}
