/**
 * A second gateway beside the local one, for a test of its own: Traefik again, serving only its own
 * GatewayClass, with its Gateway provider throttled as Traefik ships it. A change that follows
 * another within the throttle applies only when the throttle ends: `touch` makes such a change (an
 * annotation on its Gateway), so that the next route write reaches the requests that long after it
 * is written, as in a busy cluster, or with a data plane that is slow to apply.
 */
import { k8s } from '../../k8s/client.js';
import { freePort } from '../../scripts/env/ports.js';
import { applyGateway, gatewayProgrammed, gatewayReady, parentRefOf, startGateway, type GatewaySpec } from '../../scripts/env/gateway.js';
import { isAlive, pollUntil, stopProcess } from '../../scripts/env/process.js';
import type { TestSystem } from './system.js';

export interface SlowGateway {
  url: string;
  parentRef: ReturnType<typeof parentRefOf>;
  /** A change the gateway sees now: the route change that follows applies when its throttle ends. */
  touch(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSlowGateway(s: TestSystem, throttleSeconds: number): Promise<SlowGateway> {
  const kubeconfig = process.env.KUBECONFIG!;
  const spec: GatewaySpec = { gatewayClass: `konfidence-slow-${s.ns}`, namespace: s.ns, name: 'slow', throttleSeconds };
  const ports = { gateway: await freePort(), gatewayAdmin: await freePort(), gatewayMetrics: await freePort() };
  const api = s.kc.makeApiClient(k8s.CustomObjectsApi);
  const group = 'gateway.networking.k8s.io';
  const pid = startGateway(ports, kubeconfig, spec);
  const stop = async () => {
    await stopProcess(pid);
    // Its Gateway goes with the test's namespace; the GatewayClass is cluster-wide.
    await api.deleteClusterCustomObject({ group, version: 'v1', plural: 'gatewayclasses', name: spec.gatewayClass }).catch(() => undefined);
  };
  try {
    await pollUntil(async () => isAlive(pid) && (await gatewayReady(ports, spec).catch(() => false)), 30_000, `the slow gateway's Traefik to answer`, 200);
    await applyGateway(kubeconfig, ports.gateway, spec);
    await gatewayProgrammed(kubeconfig, spec);
  } catch (err) {
    await stop();
    throw err;
  }
  let touches = 0;
  return {
    url: `http://127.0.0.1:${ports.gateway}`,
    parentRef: parentRefOf(spec),
    async touch() {
      const body = { metadata: { annotations: { 'test.konfidence.cloud/touch': String(++touches) } } };
      await api.patchNamespacedCustomObject({ group, version: 'v1', plural: 'gateways', namespace: s.ns, name: spec.name, body }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
    },
    stop,
  };
}
