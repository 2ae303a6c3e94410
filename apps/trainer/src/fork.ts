import { CreditlabApiError, CreditlabClient, type Connection } from '@creditlab/client';
import type { TrainerConfig } from './config';
import { TrainerInputError } from './errors';
import type { TrainerHooks } from './iteration';
import { train } from './trainer';
import type { TrainingResult } from './training-loop';

/**
 * Fork: a new run from run `parentRunId`'s config and seed under another method, linked to its parent.
 * From scratch (checkpoint 0), the same seed gives the same initial weights; from checkpoint k, the
 * parent's weights and optimizer state after k iterations. Either way the fork's first iteration (0, or
 * k) samples exactly the rollouts its parent sampled in that iteration, since an iteration's random
 * stream depends only on (seed, iteration): only the advantages, and what follows from them, differ.
 * Everything else is the parent's, its iteration count included, unless `overrides` says otherwise.
 */
export async function fork(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
  overrides: Partial<Pick<TrainerConfig, 'iterations' | 'checkpointEvery'>> = {},
  fromCheckpoint = 0,
): Promise<TrainingResult> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig & { backend?: string } } | null;
  }>('query($id: ID!) { run(id: $id) { config } }', { id: parentRunId });
  if (!run) throw new TrainerInputError(`run ${parentRunId} not found`);
  const { backend: _backend, ...parent } = run.config;
  const config = { ...parent, ...overrides, serverUrl: client.url, method, methodParams };
  if (fromCheckpoint >= config.iterations)
    throw new TrainerInputError(
      `a fork from checkpoint ${fromCheckpoint} of a ${config.iterations}-iteration run has nothing to train; pass --iterations above ${fromCheckpoint}`,
    );
  const resume =
    fromCheckpoint > 0
      ? {
          iteration: fromCheckpoint,
          checkpoint: await checkpoint(client, parentRunId, fromCheckpoint),
        }
      : undefined;
  return train({ ...config, parentRunId }, hooks, server.apiKey, resume);
}

async function checkpoint(client: CreditlabClient, runId: string, k: number): Promise<Uint8Array> {
  try {
    return (await client.downloadCheckpoint(runId, k)).data;
  } catch (e) {
    // "run … has no checkpoint 1; it has 2, 3": the server's words say what there is
    if (e instanceof CreditlabApiError && e.status === 404)
      throw new TrainerInputError(String(e.body.message ?? e.message));
    throw e;
  }
}
