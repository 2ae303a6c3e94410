import { episodeTerm } from '../core/episode-advantage';
import { episodeStatsParam, epsilonParam, normalizeParam } from '../registry/common-params';
import { defineMethod } from '../registry/method';

/**
 * GRPO: episode-level group-relative advantage (docs/estimators.md §2.2).
 *
 * For task group k with X = {R_1..R_G} (or, `episodeStats = "steps"`, each R_i
 * repeated once per step record as verl-agent does):
 *   |X| = 1 → μ = 0, σ = 1 (verl's singleton rule, so A = R/(1+ε) or R)
 *   else μ = mean(X), σ = unbiased std(X)
 *   A_i = (R_i − μ)/(σ + ε)  ("mean-std")   or   R_i − μ  ("mean", Dr.GRPO)
 * and every step of trajectory i gets A_i. All returns equal → 0.
 */
export const grpo = defineMethod({
  name: 'grpo',
  version: '1',
  description: 'GRPO: episode return normalised within its task group, broadcast to every step',
  paper: 'Shao et al. 2024, DeepSeekMath (arXiv 2402.03300)',
  params: { normalize: normalizeParam, episodeStats: episodeStatsParam, epsilon: epsilonParam },
  requires: [],
  diagnostics: [],
  estimate(batch, p) {
    return { advantages: episodeTerm(batch, p), diagnostics: {}, summary: {} };
  },
});
