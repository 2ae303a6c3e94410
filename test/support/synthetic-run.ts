import { CreditlabClient, rolloutEvents } from '@creditlab/client';
import type { RolloutBatch } from '@creditlab/estimators';
import {
  syntheticBatchJson,
  type SyntheticShape,
} from '../../libs/estimators/test/support/synthetic-rollouts';
import { ADMIN_KEY } from './test-server';

/** A run of `iterations` synthetic iterations (seeded), streamed through the client; returns the batches too. */
export async function syntheticRun(
  url: string,
  iterations: number,
  shape: SyntheticShape = { groups: 4, groupSize: 8, maxSteps: 20, statesPerGroup: 8 },
  name = 'synthetic',
  /** The key that creates it: the run goes to that key's project. */
  apiKey: string = ADMIN_KEY,
): Promise<{ id: string; batches: RolloutBatch[] }> {
  const client = new CreditlabClient({ url, apiKey });
  const { id } = await client.createRun({ name, env: 'synthetic', method: 'gigpo' });
  const batches: RolloutBatch[] = [];
  for (let i = 0; i < iterations; i++) {
    const batch = syntheticBatchJson(shape, 100 + i);
    batches.push(batch);
    await client.appendEvents(id, rolloutEvents(i, batch));
  }
  return { id, batches };
}
