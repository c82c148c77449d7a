/**
 * Removing a test's or a benchmark's namespaces once its system has stopped, so that `npm start` on
 * the same servers sees only its own objects. Nobody is left to remove the StageVersions' in-use
 * finalizers or an activation's close-out finalizer, so they are dropped here; otherwise the
 * namespaces stay Terminating and kube-controller-manager retries their deletion for ever, loading
 * the apiserver under every later measurement. Not waited for: kube-controller-manager finishes.
 */
import { k8s } from '../../k8s/client.js';
import { CustomObjects, type CustomObject } from '../../k8s/custom-objects.js';
import { forEachLimited } from '../../shared/pool.js';
import { own } from './owned.js';

export async function removeNamespaces(kc: k8s.KubeConfig, namespaces: readonly string[]): Promise<void> {
  own(...namespaces); // their workflows are terminated after the file (test/support/environment.js)
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = new CustomObjects(kc);
  for (const namespace of namespaces) {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    for (const kind of ['StageVersion', 'VectorActivation']) {
      const held = (await objects.list(kind, namespace).catch(() => [] as CustomObject[])).filter(
        (o) => o.metadata.finalizers?.length,
      );
      await forEachLimited(held, 8, (o) =>
        objects.mergeMetadata(kind, namespace, o.metadata.name, { finalizers: null }).then(
          () => undefined,
          () => undefined,
        ),
      );
    }
  }
}
