import { rolloutEvents, type CreditlabClient } from '@creditlab/client';
import type { ClientEvent } from '@creditlab/events';
import {
  syntheticBatchJson,
  type SyntheticShape,
} from '../../libs/estimators/test/support/synthetic-rollouts';

/** The benchmarks' iteration: tasks of G = 8 rollouts of up to 50 steps over 20 recurring states. */
export const BENCH_ITERATION: SyntheticShape = {
  groups: 16,
  groupSize: 8,
  maxSteps: 50,
  statesPerGroup: 20,
  textLength: 120,
  withoutEmbeddings: true,
};

/**
 * A finished synthetic run of about `totalSteps` steps, iteration after iteration, through the HTTP
 * API. `metrics(i)`: events logged after iteration i's rollouts (metrics, evaluations), if any;
 * `afterIteration(run, i)`: what to do once iteration i is stored, before the next one.
 */
export async function ingestRun(
  client: CreditlabClient,
  name: string,
  shape: SyntheticShape,
  totalSteps: number,
  metrics: (iteration: number) => ClientEvent[] = () => [],
  /** Called after each iteration's append, while the run is running (as a trainer would act on it). */
  afterIteration: (runId: string, iteration: number) => Promise<void> = async () => undefined,
) {
  const { id } = await client.createRun({ name, env: 'synthetic', method: 'gigpo' });
  let steps = 0;
  let iteration = 0;
  const sizes: number[] = [];
  while (steps < totalSteps) {
    const batch = syntheticBatchJson(
      { ...shape, maxTotalSteps: Math.min(shape.maxTotalSteps ?? Infinity, totalSteps - steps) },
      1000 + iteration,
    );
    const n = batch.groups.reduce(
      (a, g) => a + g.trajectories.reduce((b, t) => b + t.steps.length, 0),
      0,
    );
    await client.appendEvents(id, [
      ...rolloutEvents(iteration, batch, 2000),
      ...metrics(iteration),
    ]);
    await afterIteration(id, iteration);
    sizes.push(n);
    steps += n;
    iteration++;
  }
  // Finishing the run makes every iteration complete, so recompute covers them all.
  await client.appendEvents(id, [
    { id: crypto.randomUUID(), type: 'run.finished', data: { status: 'completed' } },
  ]);
  return { id, iterations: iteration, steps, sizes };
}
