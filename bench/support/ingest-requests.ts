import { rolloutEvents } from '@creditlab/client';
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
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
}

/** Writes one NDJSON file per iteration-sized request; returns their paths and total size. */
export async function writeRequests(
  dir: string,
  s: IngestScenario,
): Promise<{ files: string[]; bytes: number }> {
  const files: string[] = [];
  let bytes = 0;
  let sink = new JsonBatchSink();
  let groupsInIteration = 0;
  const flush = async () => {
    if (groupsInIteration === 0) return;
    const file = path.join(dir, `${s.label}-${files.length}.ndjson`);
    const out = createWriteStream(file);
    for (const e of rolloutEvents(files.length, sink.batch, 2000, { columnar: s.columnar }))
      out.write(`${JSON.stringify(e)}\n`);
    await new Promise((r) => out.end(r));
    bytes += (await stat(file)).size;
    files.push(file);
    sink = new JsonBatchSink();
    groupsInIteration = 0;
  };
  // Route the generator's groups into per-iteration batches.
  const router = {
    beginGroup: (id: string) => sink.beginGroup(id),
    beginTrajectory: (id: string, o?: 'success' | 'failure' | 'truncated') =>
      sink.beginTrajectory(id, o),
    addStep: (step: Parameters<JsonBatchSink['addStep']>[0]) => sink.addStep(step),
    endTrajectory: () => undefined,
    endGroup: () => {
      groupsInIteration++;
    },
  };
  let written = 0;
  let seed = 1;
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
  return { files, bytes };
}
