/** A step that sets the new version's share of the traffic: one round of the plan's steps at that weight. */
import type { StepKindRules } from './types.js';

export const weightStep: StepKindRules<'weight'> = {
  kind: 'weight',
  of: (step) => (step.setWeight !== undefined ? { kind: 'weight', weight: step.setWeight } : undefined),
};
