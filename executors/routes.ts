/** Read-modify-write of routing objects with optimistic concurrency (resourceVersion) and retries. */
import { apiMessage, apiStatus } from '../k8s/client.js';
import { customObjectPath, JsonRequests } from '../k8s/json-requests.js';
import { ExecutorError, type ExecutorContext, type RouteKind } from './types.js';

export type Route = { metadata: { name: string; namespace: string; resourceVersion?: string }; spec: any };

/** What a person can do about a refused request, by status. */
const REFUSED: Record<number, string> = {
  400: 'the apiserver refused the request as malformed (400)',
  401: "not authenticated (401): check the executor worker's credentials",
  403: "forbidden (403): grant the executor worker's ServiceAccount this permission (see deploy/base/rbac/)",
  404: 'not found (404)',
  422: 'the apiserver refused the change as invalid (422)',
};

/**
 * Classifies a failed Kubernetes API call. Conflicts (409), throttling (429), server errors and
 * network errors may pass: retryable. Any other 4xx repeats identically on every retry: not
 * retryable, with the apiserver's own message (a 403 names the user, verb and resource).
 */
export function apiError(err: unknown, doing: string): ExecutorError {
  if (err instanceof ExecutorError) return err;
  const status = apiStatus(err);
  const message = apiMessage(err);
  if (status === undefined || status === 409 || status === 429 || status >= 500 || status < 400) {
    return new ExecutorError(`${doing}: ${message}`, true, status);
  }
  return new ExecutorError(`${doing}: ${REFUSED[status] ?? `refused (${status})`}: ${message}`, false, status);
}

const routePath = (kind: RouteKind, namespace: string, name: string) =>
  customObjectPath(kind.group, kind.version, kind.plural, namespace, name);

/** A route's whole reference as one key: group, kind, namespace, name. */
export const routeKey = (kind: Pick<RouteKind, 'group' | 'kind'>, namespace: string, name: string) =>
  `${kind.group}/${kind.kind}/${namespace}/${name}`;

/** The route from `ctx.routes`, else the watch's cache (`ctx.cachedRoute`), else the apiserver; a copy to edit. */
export async function readRoute(
  kind: RouteKind,
  namespace: string,
  name: string,
  ctx: ExecutorContext,
): Promise<Route> {
  const key = routeKey(kind, namespace, name);
  const cached = ctx.routes?.get(key);
  if (cached) return structuredClone(await cached) as Route;
  const watched = ctx.cachedRoute?.(kind, namespace, name) as Route | undefined;
  const read = watched ? Promise.resolve(watched) : fetchRoute(kind, namespace, name, ctx);
  ctx.routes?.set(key, read);
  return structuredClone(await read);
}

async function fetchRoute(kind: RouteKind, namespace: string, name: string, ctx: ExecutorContext): Promise<Route> {
  try {
    return await new JsonRequests(ctx.kubeConfig).send<Route>({
      method: 'GET',
      path: routePath(kind, namespace, name),
    });
  } catch (err) {
    // A missing route is a registration that names the wrong object: no retry brings it back.
    if (apiStatus(err) === 404)
      throw new ExecutorError(
        `${kind.kind} ${namespace}/${name} not found: create it or correct the registration's spec`,
        false,
        404,
      );
    throw apiError(err, `reading ${kind.kind} ${namespace}/${name}`);
  }
}

/** Describes a change of a route's spec (mutating it); throws ExecutorError when it cannot. */
export type RouteEdit = (spec: any) => string[];

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
  const requests = new JsonRequests(ctx.kubeConfig);
  for (let attempt = 1; ; attempt++) {
    ctx.signal.throwIfAborted();
    const route = await readRoute(kind, namespace, name, ctx);
    const before = JSON.stringify(route.spec);
    const changes = await edit(route.spec);
    if (JSON.stringify(route.spec) === before) return [];
    try {
      const written = await requests.send<Route>({
        method: 'PUT',
        path: routePath(kind, namespace, name),
        body: JSON.stringify(route),
      });
      // The route as the apiserver stored it (admission included): what a read-back would find.
      ctx.routes?.set(routeKey(kind, namespace, name), Promise.resolve(written));
      return changes;
    } catch (err) {
      // Someone wrote in between: edit what is there now, not what was read.
      ctx.routes?.delete(routeKey(kind, namespace, name));
      if (apiStatus(err) === 409 && attempt < 10) continue;
      throw apiError(err, `writing ${kind.kind} ${namespace}/${name}`);
    }
  }
}

/**
 * Edits several routes, checking every one first (read, edit a copy) so that a missing route or an
 * ambiguous rule stops the task before any route changed, not halfway through (a task's reads are
 * its observe's, kept in `ctx.routes`: the check reads nothing again).
 */
export async function updateRoutes(
  kind: RouteKind,
  targets: { namespace: string; name: string; edit: RouteEdit }[],
  ctx: ExecutorContext,
): Promise<string[]> {
  for (const t of targets) t.edit(structuredClone((await readRoute(kind, t.namespace, t.name, ctx)).spec));
  const messages: string[] = [];
  for (const t of targets) {
    messages.push(...(await updateRoute(kind, t.namespace, t.name, ctx, t.edit)));
    ctx.heartbeat();
  }
  return messages;
}
