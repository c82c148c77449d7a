/**
 * The requests a step must make, on ConfigMaps (the cheapest objects the apiserver keeps, so the
 * figure does not overcount them): a bookkeeping write is one merge patch; the executor reads the route,
 * writes its record, then writes the route. With `writes` false each returns at once.
 */
import { k8s } from '../../k8s/client.js';

export interface ShapeActivities {
  bookkeeping(writes: boolean, what: string): Promise<void>;
  route(writes: boolean, step: number): Promise<void>;
}

/** A ConfigMap for each object a step writes: three the core writes side by side, and the executor's two. */
export const CONFIG_MAPS = ['status', 'previous', 'next', 'start', 'end', 'record', 'route'];

export function shapeActivities(kc: k8s.KubeConfig, namespace: string): ShapeActivities {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const patch = (name: string, data: Record<string, string>) =>
    api.patchNamespacedConfigMap({ name, namespace, body: { data } }, options);
  return {
    /** `what`: the ConfigMap to write (one of CONFIG_MAPS), then a dash and the step. */
    async bookkeeping(writes, what) {
      if (writes) await patch(what.split('-')[0]!, { at: String(Date.now()) });
    },
    async route(writes, step) {
      if (!writes) return;
      const route = await api.readNamespacedConfigMap({ name: 'route', namespace });
      await patch('record', { [`step${step}`]: JSON.stringify(route.data ?? {}) });
      await patch('route', { weight: String(step) });
    },
  };
}
