/**
 * Reading and writing the core rollout ConfigMap (api/core-rollout.ts) in the system namespace:
 * the watcher reads it before starting a workflow (from its watch, CoreRolloutWatch), `konfidence
 * rollout` writes it.
 */
import {
  CORE_ROLLOUT_CONFIGMAP,
  coreRolloutConfigMapData,
  parseCoreRollout,
  type CoreRollout,
} from '../api/core-rollout.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { keepWatching } from '../k8s/kind-cache.js';
import type { LogFn } from '../telemetry/log.js';

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

/**
 * The rollout as the system namespace's ConfigMaps are watched: read before every workflow start
 * with no request, and a canary set a moment ago applies to the next start once its watch event
 * came. Until the first list succeeded, or while the list is refused (a Role without list and
 * watch on ConfigMaps), it is read from the apiserver as before.
 */
export class CoreRolloutWatch {
  private readonly informer: k8s.Informer<k8s.V1ConfigMap> & k8s.ObjectCache<k8s.V1ConfigMap>;
  private listed = false;
  private stopped = false;

  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly systemNamespace: string,
    log: LogFn,
  ) {
    const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
    // The one ConfigMap by name: a Role may grant list and watch of it alone (resourceNames).
    const fieldSelector = `metadata.name=${CORE_ROLLOUT_CONFIGMAP}`;
    const list = async () => {
      try {
        const listed = await api.listNamespacedConfigMap({ namespace: systemNamespace, fieldSelector });
        this.listed = true;
        return listed;
      } catch (err) {
        this.listed = false;
        throw err;
      }
    };
    this.informer = new k8s.ListWatch(
      `/api/v1/namespaces/${systemNamespace}/configmaps`,
      new k8s.Watch(kubeConfig),
      list,
      false,
      undefined,
      fieldSelector,
    );
    keepWatching(this.informer, {
      stopped: () => this.stopped,
      refused: (refusal) =>
        log(`the core rollout is read before every start: the watch of ConfigMaps was refused (${refusal})`, {
          level: 'warn',
        }),
      broke: (message) => log(`watch of the core rollout broke (${message}); re-listing`, { level: 'warn' }),
    });
  }

  /** Resolves after the first list (also when it failed: reads then go to the apiserver). */
  async start(): Promise<void> {
    await this.informer.start().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  /** The rollout, or undefined when there is none; an invalid ConfigMap throws, as a read of it does. */
  async current(): Promise<CoreRollout | undefined> {
    if (!this.listed) return readCoreRollout(this.kubeConfig, this.systemNamespace);
    const cm = this.informer.get(CORE_ROLLOUT_CONFIGMAP, this.systemNamespace);
    return cm ? parseCoreRollout(cm.data) : undefined;
  }
}
