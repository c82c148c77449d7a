/** The executor types that ship with konfidence-activation. */
import { gatewayApiExecutor } from './gateway-api/index.js';
import { istioExecutor } from './istio/index.js';
import type { Executor } from './types.js';

export const builtInExecutors: readonly Executor<any>[] = [gatewayApiExecutor, istioExecutor];

export function executorFor(type: string): Executor<any> | undefined {
  return builtInExecutors.find((e) => e.type === type);
}
