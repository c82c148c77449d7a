/**
 * Kubernetes client helpers shared by activities, workers, scripts and tests. Never import this from
 * workflow code: @kubernetes/client-node does I/O and is not deterministic.
 */
import * as k8s from '@kubernetes/client-node';
import { statusMessage } from './status-message.js';

export { k8s };

/** From a kubeconfig path, else $KUBECONFIG / ~/.kube/config / the in-cluster service account. */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

export const FIELD_MANAGER = 'konfidence-activation';

/** Server-side apply: creates or converges the fields we own, safe to repeat. */
export async function apply<T extends k8s.KubernetesObject>(api: k8s.KubernetesObjectApi, object: T): Promise<T> {
  return api.patch(object, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
}

/** The HTTP status of a failed apiserver call, or undefined for other errors. */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

/** The apiserver's own message for a failed call (what kubectl would print). */
export function apiMessage(err: unknown): string {
  if (err instanceof k8s.ApiException) {
    return statusMessage(err.body, err.code);
  }
  return err instanceof Error ? err.message : String(err);
}

