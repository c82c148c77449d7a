/**
 * Every activity of the core worker, grouped by concern in the files beside this one, each safe
 * to repeat. Permanent apiserver refusals fail fast (see k8s-errors.ts); the workflow bounds the rest.
 */
import type { k8s } from '../k8s/client.js';
import type { LogFn } from '../telemetry/log.js';
import { activationStatusActivities } from './activation-status.js';
import { analysisActivities } from './analysis.js';
import { breakerActivities } from './breaker.js';
import { closeOutFinalizerActivities } from './close-out-finalizer.js';
import { coreDeps } from './deps.js';
import { executionActivities } from './executions.js';
import { failFastOnPermanentErrors } from './k8s-errors.js';
import { leaseActivities } from './lease.js';
import { planActivities } from './plan.js';
import { stageVersionActivities } from './stage-versions.js';
import { finishRunActivities } from './finish-run.js';
import { startRunActivities } from './start-run.js';
import { switchServingActivities } from './switch-serving.js';
import { takeStageActivities } from './take-stage.js';
import { usageActivities } from './usages.js';

export interface CoreActivityOptions {
  kubeConfig: k8s.KubeConfig;
  systemNamespace: string;
  log?: LogFn;
  /** The worker's build (Worker Versioning): written into every VectorActivation status it writes. */
  coreBuildId?: string;
  /** Where analyses that name no address ask (KONFIDENCE_PROMETHEUS_URL). */
  prometheusUrl?: string;
}

/** The activities that each make one change or read; the composites below are made of them. */
function coreParts({ kubeConfig, systemNamespace, log, coreBuildId, prometheusUrl }: CoreActivityOptions) {
  const deps = coreDeps(kubeConfig, systemNamespace, log);
  return failFastOnPermanentErrors({
    ...analysisActivities(prometheusUrl),
    ...activationStatusActivities(deps, coreBuildId),
    ...planActivities(deps),
    ...usageActivities(deps),
    ...executionActivities(deps),
    ...stageVersionActivities(deps),
    ...leaseActivities(deps),
    ...breakerActivities(deps),
    ...closeOutFinalizerActivities(deps),
  });
}
export type CoreParts = ReturnType<typeof coreParts>;

/**
 * The parts and the composites made of them (each one local activity where the workflow would
 * wait for several). Tests compose their fakes of the parts the same way.
 */
export function composeActivities<P extends CoreParts>(parts: P) {
  return { ...parts, ...takeStageActivities(parts), ...startRunActivities(parts), ...switchServingActivities(parts), ...finishRunActivities(parts) };
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
