/**
 * What a Gateway API implementation says of an HTTPRoute generation written: each parent Gateway
 * that an implementation serves (its GatewayClass Accepted by a controller) reports, in the route's
 * status.parents, whether it accepted the route and resolved its backends. The executor's verify
 * asks it of every route it wrote (./index.ts): a route the implementation refuses (a backend
 * Service that does not exist, say) fails the task with the implementation's own message.
 * `parentVerdict` decides from one reading (pure, table-tested); `implementationVerdict` reads and
 * waits, bounded.
 */
import { k8s, apiStatus } from '../../k8s/client.js';
import { readRoute } from '../routes.js';
import { ExecutorError, type ExecutorContext, type RouteKind } from '../types.js';

const GROUP = 'gateway.networking.k8s.io';
/** How long the implementation has to report on the generation written. */
const REPORT_TIMEOUT_MS = 15_000;
const POLL_MS = 200;

export interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

export interface RouteStatus {
  parents?: { parentRef: ParentRef; controllerName: string; conditions?: Condition[] }[];
}

/** A parent Gateway and the controller that serves it (its GatewayClass Accepted). */
export interface ServedParent {
  ref: ParentRef;
  controllerName: string;
}

export type ParentVerdict = { state: 'waiting' } | { state: 'accepted' } | { state: 'refused'; message: string };

const sameParent = (a: ParentRef, b: ParentRef, routeNamespace: string) =>
  a.name === b.name &&
  (a.namespace ?? routeNamespace) === (b.namespace ?? routeNamespace) &&
  (a.sectionName ?? '') === (b.sectionName ?? '');

/**
 * One parent's word on `generation`: refused (with its reasons and messages) as soon as its
 * controller's entry reports Accepted or ResolvedRefs False for that generation or a later one (an
 * implementation may report only the condition that fails); accepted once both are True; else
 * waiting.
 */
export function parentVerdict(
  status: RouteStatus | undefined,
  parent: ServedParent,
  routeNamespace: string,
  generation: number,
): ParentVerdict {
  const entry = status?.parents?.find(
    (p) => p.controllerName === parent.controllerName && sameParent(p.parentRef, parent.ref, routeNamespace),
  );
  const reported = ['Accepted', 'ResolvedRefs'].map((type) =>
    entry?.conditions?.find((c) => c.type === type && (c.observedGeneration ?? 0) >= generation),
  );
  const refusals = reported.filter((c) => c?.status === 'False') as Condition[];
  if (refusals.length > 0)
    return {
      state: 'refused',
      message: refusals
        .map((c) => `${c.type} False (${c.reason ?? 'no reason'})${c.message ? `: ${c.message}` : ''}`)
        .join('; '),
    };
  return reported.every((c) => c?.status === 'True') ? { state: 'accepted' } : { state: 'waiting' };
}

/** The parents of the route that an implementation serves: a Gateway whose GatewayClass a controller Accepted. */
async function servedParents(
  parents: ParentRef[],
  routeNamespace: string,
  ctx: ExecutorContext,
): Promise<ServedParent[]> {
  const api = ctx.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
  const get = async <T>(read: () => Promise<unknown>): Promise<T | undefined> => {
    try {
      return (await read()) as T;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  };
  const served: ServedParent[] = [];
  for (const ref of parents.filter((p) => (p.group ?? GROUP) === GROUP && (p.kind ?? 'Gateway') === 'Gateway')) {
    const gateway = await get<{ spec: { gatewayClassName: string } }>(() =>
      api.getNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        plural: 'gateways',
        namespace: ref.namespace ?? routeNamespace,
        name: ref.name,
      }),
    );
    if (!gateway) continue;
    const gatewayClass = await get<{ spec: { controllerName: string }; status?: { conditions?: Condition[] } }>(() =>
      api.getClusterCustomObject({
        group: GROUP,
        version: 'v1',
        plural: 'gatewayclasses',
        name: gateway.spec.gatewayClassName,
      }),
    );
    if (gatewayClass?.status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True'))
      served.push({ ref, controllerName: gatewayClass.spec.controllerName });
  }
  return served;
}

/**
 * Waits (bounded) until every implementation serving one of the route's parents reported on the
 * generation written; throws, not to be retried, the implementation's own words when it refuses
 * the route. Returns what the task says of it.
 */
export async function implementationVerdict(
  kind: RouteKind,
  namespace: string,
  name: string,
  ctx: ExecutorContext,
): Promise<string> {
  const written = await readRoute(kind, namespace, name, ctx);
  const generation = (written.metadata as { generation?: number }).generation ?? 0;
  const where = `${kind.kind} ${namespace}/${name}`;
  let served: ServedParent[];
  try {
    served = await servedParents(written.spec.parentRefs ?? [], namespace, ctx);
  } catch (err) {
    // A gateway that cannot be looked at (RBAC, say) takes nothing from the write already checked.
    return `${where}: the gateway implementation could not be asked (${(err as Error).message}); the write is verified by reading it back`;
  }
  if (served.length === 0)
    return `no Gateway API implementation serves the parents of ${where}: the write is verified by reading it back`;
  const deadline = Date.now() + REPORT_TIMEOUT_MS;
  for (;;) {
    ctx.signal.throwIfAborted();
    // Fresh reads: the status is the implementation's, written after our write.
    const fresh: ExecutorContext = {
      kubeConfig: ctx.kubeConfig,
      signal: ctx.signal,
      heartbeat: ctx.heartbeat,
      routes: new Map(),
    };
    const status = (await readRoute(kind, namespace, name, fresh)) as { status?: RouteStatus };
    const verdicts = served.map((p) => ({ p, v: parentVerdict(status.status, p, namespace, generation) }));
    const refused = verdicts.find(({ v }) => v.state === 'refused');
    if (refused && refused.v.state === 'refused') {
      throw new ExecutorError(
        `${refused.p.controllerName} refuses ${where} (generation ${generation}) on Gateway ${refused.p.ref.namespace ?? namespace}/${refused.p.ref.name}: ${refused.v.message}`,
      );
    }
    if (verdicts.every(({ v }) => v.state === 'accepted')) {
      return `${where} generation ${generation} accepted by ${[...new Set(served.map((p) => p.controllerName))].join(', ')}`;
    }
    if (Date.now() > deadline) {
      // Not retried: the write is in place, and a repeat would only wait again; the plan's onFailure decides.
      const silent = [
        ...new Set(verdicts.filter(({ v }) => v.state === 'waiting').map(({ p }) => p.controllerName)),
      ].join(', ');
      throw new ExecutorError(
        `${where}: ${silent} did not report on generation ${generation} within ${REPORT_TIMEOUT_MS / 1000}s (its entry in status.parents, with observedGeneration)`,
      );
    }
    ctx.heartbeat();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
