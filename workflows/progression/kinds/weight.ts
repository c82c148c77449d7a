/** A weight step: one round of the plan's steps at its weight. */
import { stepKind } from '../../../decisions/progression.js';
import type { StepHandler } from './index.js';

export const setWeightStep: StepHandler<'weight'> = async (progression, kind, step) => {
  // Followed at once by another round: the next step sets a weight, or this is the last step and
  // the switch's round at 100 % comes next.
  const next = progression.spec.steps[step + 1];
  const failed = await progression.setWeight(kind.weight, next ? stepKind(next).kind === 'weight' : kind.weight < 100);
  return failed ? { ending: failed } : undefined;
};
