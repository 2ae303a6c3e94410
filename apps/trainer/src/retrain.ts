import { CreditlabClient, type Connection } from '@creditlab/client';
import { textEnvironment } from '@creditlab/envs';
import type { TrainerConfig } from './config';
import { TrainerInputError } from './errors';
import type { TrainerHooks } from './iteration';
import { replayedRollouts } from './replay';
import { runTraining, type TrainingResult } from './training-loop';

/**
 * Retrain: run `parentRunId`'s updates again on its stored rollouts under another method — same data,
 * other credit. A new run linked to the parent receives copies of the parent's rollouts iteration by
 * iteration (so its advantage sets and `advantages.used` events are its own), and a fresh policy with
 * the parent's seed is updated with PPO on them. It uploads no checkpoints.
 * `iterations`: retrain only the parent's iterations below it (default: all of them).
 */
export async function retrain(
  server: Connection,
  parentRunId: string,
  method: string,
  methodParams: Record<string, unknown> = {},
  hooks: TrainerHooks = {},
  options: { iterations?: number } = {},
): Promise<TrainingResult> {
  const client = CreditlabClient.connect(server);
  const { run } = await client.graphql<{
    run: { config: TrainerConfig; iterations: { index: number; stepCount: number }[] } | null;
  }>('query($id: ID!) { run(id: $id) { config iterations { index stepCount } } }', {
    id: parentRunId,
  });
  if (!run) throw new TrainerInputError(`run ${parentRunId} not found`);
  const stored = run.iterations.filter((i) => i.stepCount > 0).map((i) => i.index);
  const end = options.iterations ?? (stored.at(-1) ?? -1) + 1;
  if (options.iterations !== undefined && !stored.includes(options.iterations - 1))
    throw new TrainerInputError(
      `run ${parentRunId} has rollouts for iterations ${stored.join(', ') || '(none)'}; --iterations ${options.iterations} asks for iteration ${options.iterations - 1}`,
    );
  const { backend: _backend, ...parent } = run.config as TrainerConfig & { backend?: string };
  const config = {
    ...parent,
    serverUrl: client.url,
    method,
    methodParams,
    iterations: end,
    checkpointEvery: 0,
    retrainOf: parentRunId,
  };
  return runTraining(
    client,
    {
      config,
      run: {
        name: `retrain ${method} on ${parentRunId.slice(0, 8)}`,
        tags: ['retrain'],
        parentRunId,
        forkIteration: 0,
      },
      iterations: stored.filter((i) => i < end),
      source: replayedRollouts(client, parentRunId, parent, textEnvironment(config.env)),
    },
    hooks,
  );
}
