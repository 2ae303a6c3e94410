import { rolloutEvents } from '@creditlab/client';
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import {
  generateRollouts,
  JsonBatchSink,
} from '../../libs/estimators/test/support/synthetic-rollouts';

/** 16 tasks × G = 8 rollouts × ≤ 50 steps per request, as a trainer sends them. */
const TASKS_PER_ITERATION = 16;

export interface IngestScenario {
  label: string;
  steps: number;
  embeddingDim: number;
  /** Steps sent as columns (docs/events.md, "Columnar steps") rather than one object each. */
  columnar?: boolean;
  /**
   * Iterations sent together in requests of up to this many bytes (each holds one at least), as the
   * clients send a backlog; undefined for one request per iteration, as a trainer sends each one.
   */
  requestBytes?: number;
  /**
   * One request body per iteration, handed in turn to the TypeScript client's background sender
   * (`client.sender(runId)`), which joins what queued while its last request was out.
   */
  sender?: boolean;
  /**
   * Each step with two fields beyond rollout-batch/v1, as a trainer's carry (its task seed, the
   * turn): the row form's `extra`, the columnar form's `extra` column.
   */
  extraFields?: boolean;
}

/**
 * Writes the run's NDJSON as request bodies, one file each: one per iteration, or iterations
 * together up to `requestBytes`; returns their paths, how many iterations each holds, and their
 * total size.
 */
export async function writeRequests(
  dir: string,
  s: IngestScenario,
): Promise<{ files: string[]; iterations: number[]; bytes: number }> {
  const files: string[] = [];
  const iterations: number[] = [];
  let bytes = 0;
  let sink = new JsonBatchSink();
  let groupsInIteration = 0;
  let iteration = 0;
  let request: { out: WriteStream; bytes: number } | undefined;
  const endRequest = async () => {
    if (request) await new Promise((r) => request?.out.end(r));
    request = undefined;
  };
  const flush = async () => {
    if (groupsInIteration === 0) return;
    const body = Buffer.from(
      rolloutEvents(iteration++, sink.batch, 2000, { columnar: s.columnar === true })
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(''),
    );
    if (request && (s.requestBytes === undefined || request.bytes + body.length > s.requestBytes))
      await endRequest();
    if (!request) {
      const file = path.join(dir, `${s.label}-${files.length}.ndjson`);
      request = { out: createWriteStream(file), bytes: 0 };
      files.push(file);
      iterations.push(0);
    }
    iterations.push((iterations.pop() as number) + 1);
    if (!request.out.write(body)) await once(request.out, 'drain');
    request.bytes += body.length;
    bytes += body.length;
    sink = new JsonBatchSink();
    groupsInIteration = 0;
  };
  // Route the generator's groups into per-iteration batches.
  const router = {
    beginGroup: (id: string) => sink.beginGroup(id),
    beginTrajectory: (id: string, o?: 'success' | 'failure' | 'truncated') =>
      sink.beginTrajectory(id, o),
    addStep: (step: Parameters<JsonBatchSink['addStep']>[0]) =>
      sink.addStep(s.extraFields ? { ...step, ...{ taskSeed: seed, turn: turn++ } } : step),
    endTrajectory: () => undefined,
    endGroup: () => {
      groupsInIteration++;
    },
  };
  let written = 0;
  let seed = 1;
  let turn = 0;
  while (written < s.steps) {
    generateRollouts(
      router,
      {
        groups: TASKS_PER_ITERATION,
        groupSize: 8,
        maxSteps: 50,
        statesPerGroup: 20,
        textLength: 200,
        embeddingDim: s.embeddingDim || 8,
        withoutEmbeddings: s.embeddingDim === 0,
      },
      seed++,
    );
    written += sink.batch.groups.reduce(
      (n, g) => n + g.trajectories.reduce((m, t) => m + t.steps.length, 0),
      0,
    );
    await flush();
  }
  await endRequest();
  return { files, iterations, bytes };
}
