import { episodeWeights } from '../core/episode-advantage';
import { broadcastToSteps, episodeReturns } from '../core/returns';
import { episodeStatsParam } from '../registry/common-params';
import { defineMethod } from '../registry/method';
import { typedReads } from '../typed-arrays';

const { at, intAt } = typedReads;

/**
 * RLOO: leave-one-out baseline (docs/estimators.md §2.3).
 *
 *   A_i = R_i − (1/(n−1)) Σ_{j≠i} R_j  =  n/(n−1)·(R_i − mean(R))      (n ≥ 2)
 *
 * With `episodeStats = "steps"` the members are step records (each carries its
 * trajectory's R), i.e. verl-agent's leave-one-*record*-out baseline with n =
 * number of step records in the group. n = 1: `singleton = "keep"` gives A = R
 * (the reference, CHOICE C6), `"zero"` gives 0.
 */
export const rloo = defineMethod({
  name: 'rloo',
  version: '1',
  description: 'RLOO: episode return minus the mean return of the other members of its group',
  paper: 'Ahmadian et al. 2024, "Back to Basics" (arXiv 2402.14740)',
  params: {
    episodeStats: episodeStatsParam,
    singleton: {
      type: 'enum',
      values: ['keep', 'zero'],
      default: 'keep',
      description: 'one-member group: keep A = R (reference) or use 0',
    },
  },
  requires: [],
  diagnostics: [
    { name: 'baseline', kind: 'number', description: 'leave-one-out baseline of the step' },
  ],
  estimate(batch, p) {
    const R = episodeReturns(batch);
    const weight = episodeWeights(batch, p.episodeStats);
    const adv = new Float64Array(batch.trajectoryCount);
    const baseline = new Float64Array(batch.trajectoryCount);
    const off = batch.groupTrajectoryOffsets;
    for (let g = 0; g < batch.groupCount; g++) {
      const lo = intAt(off, g);
      const hi = intAt(off, g + 1);
      let n = 0;
      let sum = 0;
      for (let i = lo; i < hi; i++) {
        n += intAt(weight, i);
        sum += intAt(weight, i) * at(R, i);
      }
      for (let i = lo; i < hi; i++) {
        if (n === 1) {
          adv[i] = p.singleton === 'keep' ? at(R, i) : 0;
          continue;
        }
        baseline[i] = (sum - at(R, i)) / (n - 1);
        adv[i] = at(R, i) - at(baseline, i);
      }
    }
    return {
      advantages: broadcastToSteps(batch, adv),
      diagnostics: { baseline: broadcastToSteps(batch, baseline) },
      summary: {},
    };
  },
});
