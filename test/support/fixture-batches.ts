import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RolloutBatch } from '@creditlab/estimators';
import { CONFORMANCE_DIR } from './conformance-dir';

/** Every rollout batch of the conformance fixtures, by file name. */
export function fixtureBatches(): [string, RolloutBatch][] {
  const root = CONFORMANCE_DIR;
  return ['verl-agent', 'spec'].flatMap((dir) =>
    readdirSync(path.join(root, dir))
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map(
        (f) =>
          [
            `${dir}/${f}`,
            (JSON.parse(readFileSync(path.join(root, dir, f), 'utf8')) as { batch: RolloutBatch })
              .batch,
          ] as [string, RolloutBatch],
      ),
  );
}
