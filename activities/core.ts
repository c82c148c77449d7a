/**
 * Every activity of the core worker, grouped by concern in the files beside this one, each safe
 * to repeat. Permanent apiserver refusals fail fast (see k8s-errors.ts); the workflow bounds the rest.
 */
import { finishRunActivities } from './finish-run.js';
import { measureActivities } from './measure.js';
import { startRunActivities } from './start-run.js';
import { switchServingActivities } from './switch-serving.js';
import { takeStageActivities } from './take-stage.js';
import { coreParts, type CoreActivityOptions, type CoreParts } from './parts.js';

export type { CoreActivityOptions, CoreParts };

/**
 * The parts and the composites made of them (each one local activity where the workflow would
 * wait for several). Tests compose their fakes of the parts the same way.
 */
export function composeActivities<P extends CoreParts>(parts: P) {
  return {
    ...parts,
    ...takeStageActivities(parts),
    ...startRunActivities(parts),
    ...switchServingActivities(parts),
    ...finishRunActivities(parts),
    ...measureActivities(parts),
  };
}

export function createActivationActivities(options: CoreActivityOptions) {
  // The parts' failures already name the operation that failed.
  return composeActivities(coreParts(options));
}

export type ActivationActivities = ReturnType<typeof createActivationActivities>;
export type { PlannedTask, ResolvedPlan } from './plan.js';
export type { LoadedActivation } from './activation-status.js';
export type { StageState } from './stage-versions.js';
export type { TakenStage } from './take-stage.js';
export type { Admission } from './breaker.js';
