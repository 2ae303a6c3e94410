/**
 * One benchmark cell, in its own process so that memory figures are its own:
 * builds a synthetic batch of about N steps, then times one method at its
 * defaults (median of several calls, GC between calls) next to a baseline
 * single backward scan over the same batch. Prints one JSON line.
 */
import { ColumnarBatchBuilder, estimate, getMethod } from '@creditlab/estimators';
import { rewardToGo } from '../libs/estimators/src/core/returns';
import { generateRollouts } from '../libs/estimators/test/support/synthetic-rollouts';
import { median } from './support/bench-report';

const [method = 'gigpo', stepsArg = '10000'] = process.argv.slice(2);
const target = Number(stepsArg);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const needsEmbedding = getMethod(method).requires.includes('embedding');

const builder = new ColumnarBatchBuilder(target + 64);
generateRollouts(
  builder,
  {
    groups: Number.MAX_SAFE_INTEGER,
    groupSize: 8,
    maxSteps: 50,
    statesPerGroup: 20,
    embeddingDim: 256,
    textLength: 120,
    withoutEmbeddings: !needsEmbedding,
    maxTotalSteps: target,
  },
  42,
);
const batch = builder.build();

function timeIt(f: () => unknown, reps: number): number {
  f(); // warm-up: JIT and first-touch of the allocator
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    gc();
    const t0 = performance.now();
    f();
    times.push(performance.now() - t0);
  }
  return median(times);
}

const reps = Math.max(3, Math.min(15, Math.round(2e6 / batch.stepCount)));
const methodReps = needsEmbedding ? 3 : reps;
const baselineMs = timeIt(() => rewardToGo(batch, 0.95), reps);
gc();
const before = process.memoryUsage();
const methodStart = performance.now();
const result = estimate(batch, method);
const firstCallMs = performance.now() - methodStart;
const after = process.memoryUsage();
const allocatedBytes =
  after.arrayBuffers - before.arrayBuffers + Math.max(0, after.heapUsed - before.heapUsed);
const methodMs = timeIt(() => estimate(batch, method), methodReps);

process.stdout.write(
  `${JSON.stringify({
    method,
    steps: batch.stepCount,
    groups: batch.groupCount,
    states: batch.stateTexts.length,
    methodMs,
    firstCallMs,
    baselineMs,
    allocatedMB: allocatedBytes / 2 ** 20,
    peakRssMB: (process.resourceUsage().maxRSS * 1024) / 2 ** 20,
    summary: result.summary,
  })}\n`,
);
