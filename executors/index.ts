/** The executor types that ship with konfidence-activation. */
import { gatewayApiExecutor } from './gateway-api/index.js';
import { istioExecutor } from './istio/index.js';
import type { RouteKind } from './types.js';
import type { Executor } from './types.js';

export const builtInExecutors: readonly Executor<any>[] = [gatewayApiExecutor, istioExecutor];

/** The kinds of routing objects the built-in executors read and write, each once. */
export const builtInRouteKinds: readonly RouteKind[] = builtInExecutors
  .flatMap((e) => e.routeKinds)
  .filter((k, i, all) => all.findIndex((x) => x.group === k.group && x.kind === k.kind) === i);

export function executorFor(type: string): Executor<any> | undefined {
  return builtInExecutors.find((e) => e.type === type);
}

/** A Worker registration whose rules an activation of a namespace may change, with its executor and config. */
export interface ReadableRegistration {
  name: string;
  executor: Executor<any>;
  config: unknown;
}

/**
 * The registration as one whose rules an activation of `namespace` may change (the tenancy rule
 * of activities/plan.ts); undefined for an External one, a type that is not built in, a spec its
 * executor refuses, or routes in another namespace that the registration does not allow it.
 */
export function readableRegistration(
  registration: {
    metadata: { name?: string | undefined };
    spec: { type: string; executor: string; spec?: unknown; allowCrossNamespaceFrom?: readonly string[] | undefined };
  },
  namespace: string,
): ReadableRegistration | undefined {
  const executor = registration.spec.executor === 'External' ? undefined : executorFor(registration.spec.type);
  const parsed = executor?.config.safeParse(registration.spec.spec ?? {});
  if (!executor || !parsed?.success) return undefined;
  const allowed = registration.spec.allowCrossNamespaceFrom ?? [];
  const foreign = executor.routeNamespaces(parsed.data, namespace).some((ns) => ns !== namespace);
  if (foreign && !allowed.includes('*') && !allowed.includes(namespace)) return undefined;
  return { name: registration.metadata.name!, executor, config: parsed.data };
}
