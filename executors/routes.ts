/** Read-modify-write of a routing object with optimistic concurrency (resourceVersion) and retries. */
import { apiMessage, apiStatus, k8s } from '../k8s/client.js';
import { ExecutorError, type ExecutorContext } from './types.js';

export interface RouteKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

export type Route = { metadata: { name: string; namespace: string; resourceVersion?: string }; spec: any };

export async function readRoute(kind: RouteKind, namespace: string, name: string, ctx: ExecutorContext): Promise<Route> {
  const api = ctx.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  try {
    return (await api.getNamespacedCustomObject({ ...kind, namespace, name })) as Route;
  } catch (err) {
    if (apiStatus(err) === 404) throw new ExecutorError(`${kind.kind} ${namespace}/${name} not found`);
    throw new ExecutorError(`reading ${kind.kind} ${namespace}/${name}: ${apiMessage(err)}`, true);
  }
}

/**
 * Applies `edit` to the route's current spec and writes it back if it changed; on a conflict
 * (someone else wrote in between) it re-reads and edits again. Returns the edit's description.
 */
export async function updateRoute(
  kind: RouteKind,
  namespace: string,
  name: string,
  ctx: ExecutorContext,
  edit: (spec: any) => string[] | Promise<string[]>,
): Promise<string[]> {
  const api = ctx.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  for (let attempt = 1; ; attempt++) {
    ctx.signal.throwIfAborted();
    const route = await readRoute(kind, namespace, name, ctx);
    const before = JSON.stringify(route.spec);
    const changes = await edit(route.spec);
    if (JSON.stringify(route.spec) === before) return [];
    try {
      await api.replaceNamespacedCustomObject({ ...kind, namespace, name, body: route });
      return changes;
    } catch (err) {
      if (apiStatus(err) === 409 && attempt < 10) continue;
      if (apiStatus(err) === 422) throw new ExecutorError(`${kind.kind} ${namespace}/${name} refused the change: ${apiMessage(err)}`);
      throw new ExecutorError(`writing ${kind.kind} ${namespace}/${name}: ${apiMessage(err)}`, true);
    }
  }
}
