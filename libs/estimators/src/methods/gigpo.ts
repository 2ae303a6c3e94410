import { episodeTerm } from '../core/episode-advantage';
import { plusScaled } from '../core/elementwise';
import { groupRelative } from '../core/group-stats';
import { groupingSummary, groupSizeDiagnostics } from '../core/grouping-summary';
import { rewardToGo } from '../core/returns';
import { exactStepGroups, localBucketIds, similarityStepGroups } from '../core/step-groups';
import {
  episodeStatsParam,
  epsilonParam,
  gammaParam,
  normalizeParam,
  stepWeightParam,
} from '../registry/common-params';
import { defineMethod } from '../registry/method';

/**
 * GiGPO: Group-in-Group Policy Optimization (docs/estimators.md §2.5).
 *
 *   A_{i,t} = A^E_i + w·A^S_{i,t}
 *   A^E_i     = GRPO episode term (same `normalize`, `episodeStats`)
 *   A^S_{i,t} = norm(g_{i,t}; {g_m : m ∈ 𝒮})  for the step group 𝒮 ∋ (i,t), |𝒮| ≥ 2
 *             = 0                            for a singleton step group
 * with g the discounted reward-to-go (γ). Step groups are exact anchor-state
 * groups of the task group, or, when `similarityThreshold` θ is given, greedy
 * first-match groups by difflib ratio ≥ θ against each group's first text.
 * A state revisited by one trajectory contributes one member per visit.
 * Defaults: γ = 0.95, w = 1, mean-std (CHOICE C8), trajectory statistics (C3).
 */
export const gigpo = defineMethod({
  name: 'gigpo',
  version: '1',
  description:
    'GiGPO: GRPO episode term plus a step term relative to the other visits of the same anchor state',
  paper:
    'Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training" (arXiv 2505.10978)',
  params: {
    gamma: gammaParam(0.95),
    stepWeight: stepWeightParam,
    normalize: normalizeParam,
    episodeStats: episodeStatsParam,
    epsilon: epsilonParam,
    similarityThreshold: {
      type: 'number',
      optional: true,
      min: 0,
      max: 1,
      exclusiveMin: true,
      exclusiveMax: true,
      description:
        'group states by difflib ratio ≥ θ instead of exact text (absent: exact grouping)',
    },
  },
  requires: [],
  diagnostics: [
    {
      name: 'stepGroupId',
      kind: 'integer',
      description: 'step group within the task group (order of first appearance)',
    },
    { name: 'stepGroupSize', kind: 'integer', description: 'members of the step group' },
    { name: 'singleton', kind: 'boolean', description: 'the step group has one member (A^S = 0)' },
    { name: 'advEpisode', kind: 'number', description: 'episode term A^E' },
    { name: 'advStep', kind: 'number', description: 'step term A^S (before the weight w)' },
  ],
  estimate(batch, p) {
    const advEpisode = episodeTerm(batch, p);
    const g = rewardToGo(batch, p.gamma);
    const groups =
      p.similarityThreshold === undefined
        ? exactStepGroups(batch)
        : similarityStepGroups(batch, p.similarityThreshold);
    const { term: advStep, stats } = groupRelative(g, groups, p.normalize, p.epsilon);
    return {
      advantages: plusScaled(advEpisode, p.stepWeight, advStep),
      diagnostics: {
        stepGroupId: localBucketIds(batch, groups),
        ...groupSizeDiagnostics(groups.bucketOf, stats.count),
        advEpisode,
        advStep,
      },
      summary: groupingSummary(stats.count, 'stepGroup'),
    };
  },
});
