import type { BooleanParam, EnumParam, NumberParam } from './param-schema';

/** Parameter specs that several methods share (docs/estimators.md §1.8); each method sets its own default. */

export const gammaParam = (dflt: number): NumberParam => ({
  type: 'number',
  default: dflt,
  min: 0,
  max: 1,
  description: 'discount γ of the reward-to-go g_t',
});

export const gaeLambdaParam = (dflt: number): NumberParam => ({
  type: 'number',
  default: dflt,
  min: 0,
  max: 1,
  description: 'GAE trace parameter λ (λ = 1: Monte-Carlo, λ = 0: one-step TD)',
});

export const stepWeightParam: NumberParam = {
  type: 'number',
  default: 1,
  min: 0,
  description: 'weight w of the step-level term',
};

export const normalizeParam: EnumParam<'mean-std' | 'mean'> = {
  type: 'enum',
  values: ['mean-std', 'mean'],
  default: 'mean-std',
  description: 'group normalisation: (x − μ)/(σ + ε) or x − μ',
};

export const episodeStatsParam: EnumParam<'trajectories' | 'steps'> = {
  type: 'enum',
  values: ['trajectories', 'steps'],
  default: 'trajectories',
  description:
    'episode-term statistics over one value per trajectory (paper) or per step record (verl-agent)',
};

export const epsilonParam: NumberParam = {
  type: 'number',
  default: 1e-6,
  min: 0,
  exclusiveMin: true,
  description: 'ε added to standard deviations in denominators',
};

export const bootstrapTruncatedParam: BooleanParam = {
  type: 'boolean',
  default: false,
  description:
    'bootstrap a truncated episode from its nextState/nextValue instead of treating it as terminal',
};
