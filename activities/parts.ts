/**
 * The activities that each make one change or read in Kubernetes (or ask Prometheus), wrapped so
 * that permanent apiserver refusals fail fast; activities/core.ts composes them. Apart from it so
 * that the composites, which are made of these parts, import them without importing core.ts back.
 */
import type { k8s } from '../k8s/client.js';
import type { SystemConfig } from '../k8s/system-config.js';
import type { LogFn } from '../telemetry/log.js';
import { activationStatusActivities } from './activation-status.js';
import { analysisActivities } from './analysis.js';
import { breakerActivities } from './breaker.js';
import { closeOutFinalizerActivities } from './close-out-finalizer.js';
import { coreDeps } from './deps.js';
import { executionActivities } from './executions.js';
import { failFastOnPermanentErrors } from './k8s-errors.js';
import { landscapeReportActivities } from './landscape-report.js';
import { leaseActivities } from './lease.js';
import { planActivities } from './plan.js';
import { stageVersionActivities } from './stage-versions.js';
import { usageActivities } from './usages.js';

export interface CoreActivityOptions {
  kubeConfig: k8s.KubeConfig;
  systemNamespace: string;
  log?: LogFn;
  /** The worker's build (Worker Versioning): written into every VectorActivation status it writes. */
  coreBuildId?: string;
  /** Where analyses that name no address ask (KONFIDENCE_PROMETHEUS_URL). */
  prometheusUrl?: string;
  /** The system namespace's configuration as watched: read instead of asked for per activation. */
  systemConfig?: SystemConfig;
}

/** The activities that each make one change or read; the composites below are made of them. */
export function coreParts(options: CoreActivityOptions) {
  const { kubeConfig, systemNamespace, log, coreBuildId, prometheusUrl, systemConfig } = options;
  const deps = coreDeps(kubeConfig, systemNamespace, log, systemConfig);
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
    ...landscapeReportActivities(deps),
  });
}
export type CoreParts = ReturnType<typeof coreParts>;
