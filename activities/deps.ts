/** What the core activities share: clients made once per worker, the system namespace, Events. */
import { k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { eventRecorder, type EventRecorder } from '../k8s/events.js';
import type { SystemConfig } from '../k8s/system-config.js';
import { API_VERSION } from '../api/group.js';
import { componentLogger, type LogFn } from '../telemetry/log.js';
import type { ActivationRef } from '../shared/activation.js';
import { KnownLeases } from './known-leases.js';

export interface CoreDeps {
  kubeConfig: k8s.KubeConfig;
  systemNamespace: string;
  objects: CustomObjects;
  leases: k8s.CoordinationV1Api;
  /** The Stage Leases this worker last wrote: a take or renewal writes on them without a read first. */
  knownLeases?: KnownLeases;
  event: EventRecorder;
  log: LogFn;
  /** The system namespace's plans, registrations and CircuitBreakers as watched, when the worker keeps them. */
  config?: SystemConfig;
}

export function coreDeps(
  kubeConfig: k8s.KubeConfig,
  systemNamespace: string,
  log: LogFn = componentLogger('activities').fn(),
  config?: SystemConfig,
): CoreDeps {
  return {
    kubeConfig,
    systemNamespace,
    objects: new CustomObjects(kubeConfig),
    leases: kubeConfig.makeApiClient(k8s.CoordinationV1Api),
    knownLeases: new KnownLeases(),
    event: eventRecorder(kubeConfig, log),
    log,
    ...(config ? { config } : {}),
  };
}

export function ownerRef(kind: string, name: string, uid: string) {
  return { apiVersion: API_VERSION, kind, name, uid, blockOwnerDeletion: true };
}

export const activationRegarding = (ref: ActivationRef) => ({
  apiVersion: API_VERSION,
  kind: 'VectorActivation',
  namespace: ref.namespace,
  name: ref.name,
  uid: ref.uid,
});
