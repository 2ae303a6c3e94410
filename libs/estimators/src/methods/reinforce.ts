import { broadcastToSteps, episodeReturns, rewardToGo } from '../core/returns';
import { gammaParam } from '../registry/common-params';
import { defineMethod } from '../registry/method';

/**
 * REINFORCE without a baseline (docs/estimators.md §2.1).
 *
 *   reward_to_go:  A_{i,t} = g_{i,t} = Σ_{u≥t} γ^{u−t} r_{i,u}
 *   episode:       A_{i,t} = R_i     = Σ_u r_{i,u}
 *
 * No statistics, so no edge cases: any group size is fine.
 * Defaults (CHOICE C5): γ = 1, reward-to-go.
 */
export const reinforce = defineMethod({
  name: 'reinforce',
  version: '1',
  description: 'REINFORCE: the (discounted) return itself, no baseline',
  paper: 'Williams 1992, "Simple statistical gradient-following algorithms"',
  params: {
    gamma: gammaParam(1),
    returnType: {
      type: 'enum',
      values: ['reward_to_go', 'episode'],
      default: 'reward_to_go',
      description: 'advantage = reward-to-go g_t or the whole episode return R',
    },
  },
  requires: [],
  inputs: () => [],
  diagnostics: [{ name: 'returnToGo', kind: 'number', description: 'discounted reward-to-go g_t' }],
  estimate(batch, p) {
    const g = rewardToGo(batch, p.gamma);
    const advantages =
      p.returnType === 'episode' ? broadcastToSteps(batch, episodeReturns(batch)) : g.slice();
    return { advantages, diagnostics: { returnToGo: g }, summary: {} };
  },
});
