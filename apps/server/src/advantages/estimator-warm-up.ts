import {
  ColumnarBatchBuilder,
  estimate,
  listMethods,
  type ColumnarBatch,
} from '@creditlab/estimators';

/**
 * Runs every estimator a few times on a batch with every optional field, so that a worker thread
 * has compiled the estimators before its first real task: the trainer's first call for an
 * iteration (the online path) and a server's first recompute job then pay for their own steps, not
 * for the JIT of a fresh thread. The batch has the size of a trainer's iteration rather than a
 * handful of steps: V8 optimizes a loop once it has run long enough, and after a warm-up on 36
 * steps the first 65k-step task of a job took 3–4× as long as the later ones (docs/benchmarks.md).
 */
export function warmUpEstimators(rounds = 3): void {
  const batch = warmUpBatch();
  for (let r = 0; r < rounds; r++) for (const m of listMethods()) estimate(batch, m.name);
}

/**
 * 16 tasks of 8 rollouts of 10–17 steps over 20 recurring states each (1,728 steps), with nll,
 * value, an 8-d embedding, next states and values, and successes, failures and truncated ends.
 */
function warmUpBatch(): ColumnarBatch {
  const b = new ColumnarBatchBuilder(8);
  for (let g = 0; g < 16; g++) {
    b.beginGroup(`g${g}`);
    for (let i = 0; i < 8; i++) {
      b.beginTrajectory(`g${g}/t${i}`, i === 3 ? 'truncated' : i % 2 ? 'failure' : 'success');
      for (let t = 0; t < 10 + i; t++) {
        const s = (t * 7 + i + g) % 20;
        b.addStep({
          state: `state ${g} ${s}`,
          action: `action ${(t * i) % 3}`,
          reward: t === 9 + i && i % 2 === 0 ? 1 : 0,
          nll: 0.1 * (s + 1),
          value: 0.02 * s,
          embedding: [s, 1, (t % 2) * 0.5, 0.25, g % 3, i, 0, 1],
          nextState: `state ${g} ${(s + 1) % 20}`,
          nextValue: 0.5,
        });
      }
    }
  }
  return b.build();
}
