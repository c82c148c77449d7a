/**
 * Reading and writing the core rollout ConfigMap (api/core-rollout.ts) in the system namespace:
 * the watcher reads it before starting a workflow, `konfidence rollout` writes it.
 */
import {
  CORE_ROLLOUT_CONFIGMAP,
  coreRolloutConfigMapData,
  parseCoreRollout,
  type CoreRollout,
} from '../api/core-rollout.js';
import { apiStatus, k8s } from '../k8s/client.js';

/** The rollout, or undefined when there is none (no ConfigMap: no canary, today's behaviour). */
export async function readCoreRollout(kc: k8s.KubeConfig, systemNamespace: string): Promise<CoreRollout | undefined> {
  try {
    const cm = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ name: CORE_ROLLOUT_CONFIGMAP, namespace: systemNamespace });
    return parseCoreRollout(cm.data);
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

/** Creates or replaces the ConfigMap with `rollout` (the whole data: a canary left out is ended). */
export async function writeCoreRollout(
  kc: k8s.KubeConfig,
  systemNamespace: string,
  rollout: CoreRollout,
): Promise<void> {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const body: k8s.V1ConfigMap = {
    metadata: {
      name: CORE_ROLLOUT_CONFIGMAP,
      namespace: systemNamespace,
      labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' },
    },
    data: coreRolloutConfigMapData(rollout),
  };
  try {
    await api.replaceNamespacedConfigMap({ name: CORE_ROLLOUT_CONFIGMAP, namespace: systemNamespace, body });
  } catch (err) {
    if (apiStatus(err) !== 404) throw err;
    await api.createNamespacedConfigMap({ namespace: systemNamespace, body });
  }
}
