/**
 * A second gateway beside the local one, for a test of its own: Traefik again, serving only its own
 * GatewayClass, as two replicas, as a production gateway runs. The prompt replica applies a change
 * as soon as it sees it and writes the routes' status; the late one has its Gateway provider
 * throttled as Traefik ships it, so a change that follows another within the throttle reaches its
 * requests only when the throttle ends. `touch` makes such a change (an annotation on the Gateway):
 * the route write that follows is then Accepted for its generation at once, while requests through
 * the late replica (`url`) still go where the route sent them before, as in a busy cluster.
 */
import { k8s } from '../../k8s/client.js';
import { freePort } from '../../scripts/env/ports.js';
import {
  applyGateway,
  gatewayProgrammed,
  gatewayReady,
  parentRefOf,
  startGateway,
  stopOtherGateway,
  type GatewayPorts,
  type GatewaySpec,
} from '../../scripts/env/gateway.js';
import { isAlive, pollUntil } from '../../scripts/env/process.js';
import type { TestSystem } from './system.js';

export interface SlowGateway {
  /** The late replica: requests through it reach a route change a throttle after it is Accepted. */
  url: string;
  parentRef: ReturnType<typeof parentRefOf>;
  /** A change the gateway sees now: the route change that follows applies when its throttle ends. */
  touch(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSlowGateway(s: TestSystem, throttleSeconds: number): Promise<SlowGateway> {
  const kubeconfig = process.env.KUBECONFIG!;
  const gatewayClass = `konfidence-slow-${s.ns}`;
  const prompt: GatewaySpec = { gatewayClass, namespace: s.ns, name: 'slow', throttleSeconds: 0, host: '127.0.0.1' };
  const late: GatewaySpec = { ...prompt, throttleSeconds, host: '127.0.0.2' };
  // One listener port for both replicas, as the Gateway says; each its own admin and metrics ports.
  const gateway = await freePort();
  const replicas: { spec: GatewaySpec; ports: GatewayPorts }[] = [];
  for (const spec of [prompt, late])
    replicas.push({ spec, ports: { gateway, gatewayAdmin: await freePort(), gatewayMetrics: await freePort() } });
  const api = s.kc.makeApiClient(k8s.CustomObjectsApi);
  const group = 'gateway.networking.k8s.io';
  const pids = replicas.map((r) => startGateway(r.ports, kubeconfig, r.spec));
  const stop = async () => {
    await Promise.all(pids.map((pid, i) => stopOtherGateway(pid, replicas[i]!.spec)));
    // Its Gateway goes with the test's namespace; the GatewayClass is cluster-wide.
    await api
      .deleteClusterCustomObject({ group, version: 'v1', plural: 'gatewayclasses', name: gatewayClass })
      .catch(() => undefined);
  };
  try {
    for (const [i, r] of replicas.entries()) {
      await pollUntil(
        async () => isAlive(pids[i]!) && (await gatewayReady(r.ports, r.spec).catch(() => false)),
        30_000,
        `the slow gateway's ${r.spec.host} replica to answer`,
        200,
      );
    }
    await applyGateway(kubeconfig, gateway, prompt);
    await gatewayProgrammed(kubeconfig, prompt);
  } catch (err) {
    await stop();
    throw err;
  }
  let touches = 0;
  return {
    url: `http://${late.host}:${gateway}`,
    parentRef: parentRefOf(prompt),
    async touch() {
      const body = { metadata: { annotations: { 'test.konfidence.cloud/touch': String(++touches) } } };
      await api.patchNamespacedCustomObject(
        { group, version: 'v1', plural: 'gateways', namespace: s.ns, name: prompt.name, body },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
    stop,
  };
}
