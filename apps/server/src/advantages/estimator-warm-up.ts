import {
  ColumnarBatchBuilder,
  estimate,
  listMethods,
  type ColumnarBatch,
} from '@creditlab/estimators';

/**
 * Runs every estimator a few times on a small batch with every optional field, so that a worker
 * thread has compiled the estimators before its first real task: the trainer's first call for an
 * iteration (the online path) then pays for its own steps, not for the JIT of a fresh thread.
 */
export function warmUpEstimators(rounds = 20): void {
  const batch = warmUpBatch();
  for (let r = 0; r < rounds; r++) for (const m of listMethods()) estimate(batch, m.name);
}

/** Two tasks of four rollouts over four recurring states, with nll, value, embedding and truncated ends. */
function warmUpBatch(): ColumnarBatch {
  const b = new ColumnarBatchBuilder(64);
  for (let g = 0; g < 2; g++) {
    b.beginGroup(`g${g}`);
    for (let i = 0; i < 4; i++) {
      b.beginTrajectory(`g${g}/t${i}`, i === 3 ? 'truncated' : i % 2 ? 'failure' : 'success');
      for (let t = 0; t < 3 + i; t++) {
        const s = (t + i) % 4;
        b.addStep({
          state: `state ${s}`,
          action: `action ${(t * i) % 3}`,
          reward: t === 2 + i && i % 2 === 0 ? 1 : 0,
          nll: 0.1 * (s + 1),
          value: 0.2 * s,
          embedding: [s, 1, (t % 2) * 0.5, 0.25],
          nextState: `state ${(s + 1) % 4}`,
          nextValue: 0.5,
        });
      }
    }
  }
  return b.build();
}
