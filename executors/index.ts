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
