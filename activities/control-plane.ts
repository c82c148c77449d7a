/**
 * Activities that read the cluster's state of the project. Activities are plain async functions;
 * their dependencies (the kubeconfig) are injected by the worker that registers them.
 */
import { GROUP, VERSION } from '../api/group.js';
import { allKinds } from '../api/index.js';
import { k8s } from '../k8s/client.js';

export interface ControlPlaneReport {
  kubernetesVersion: string;
  /** Kinds of the project that the apiserver serves. */
  servedKinds: string[];
  /** Kinds of the project that it does not serve (CRD missing or not established). */
  missingKinds: string[];
}

export function createControlPlaneActivities(kc: k8s.KubeConfig) {
  return {
    async inspectControlPlane(): Promise<ControlPlaneReport> {
      const version = await kc.makeApiClient(k8s.VersionApi).getCode();
      const resources = await kc
        .makeApiClient(k8s.CustomObjectsApi)
        .getAPIResources({ group: GROUP, version: VERSION })
        .catch(() => ({ resources: [] as k8s.V1APIResource[] }));
      const served = new Set(resources.resources.map((r) => r.kind));
      return {
        kubernetesVersion: version.gitVersion,
        servedKinds: allKinds.filter((k) => served.has(k.kind)).map((k) => k.kind),
        missingKinds: allKinds.filter((k) => !served.has(k.kind)).map((k) => k.kind),
      };
    },
  };
}

export type ControlPlaneActivities = ReturnType<typeof createControlPlaneActivities>;
