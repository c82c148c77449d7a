/**
 * The local control plane's gateway: Traefik, a Gateway API implementation nobody here wrote, run
 * out of cluster on loopback. It watches the Gateway API objects through the apiserver (KUBECONFIG)
 * and routes HTTP requests on its `web` entry point to Services: with native load balancing to a
 * Service's ClusterIP, which the apiserver allocates from a loopback range (components.ts), where
 * each test app's server listens. So every request stays on 127.0.0.0/8 (docs/data-plane.md).
 *
 * One GatewayClass (`konfidence-local`) and one Gateway (`konfidence-gateway/local`, its listener
 * on the web entry point's port, routes from every namespace): a route joins it by its parentRef.
 * A Traefik serves only the GatewayClass labelled for it (`konfidence.cloud/gateway`), so that a
 * test may run another one beside it, one that applies changes late, say (GatewaySpec).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { k8s, loadKubeConfig } from '../../k8s/client.js';
import { binaries, stateDir } from './paths.js';
import { pollUntil, startDetached, stopProcess } from './process.js';

/** Which Traefik serves a GatewayClass: the one whose label selector names it. */
const GATEWAY_LABEL = 'konfidence.cloud/gateway';
/** The GatewayClass' controller: the one Traefik's Gateway provider serves. */
const CONTROLLER_NAME = 'traefik.io/gateway-controller';

/** One gateway: its Traefik, its GatewayClass (labelled for that Traefik alone) and its Gateway. */
export interface GatewaySpec {
  gatewayClass: string;
  namespace: string;
  name: string;
  /**
   * Traefik's Gateway provider throttle: after it applies a change, the next waits this long (Traefik's
   * own default is 2 s; a change that follows another in a busy cluster applies that much later).
   */
  throttleSeconds: number;
  /**
   * The loopback address its entry points listen on (default 127.0.0.1): replicas of one gateway
   * listen on one port, as the Gateway's listener says, each on an address of its own.
   */
  host?: string;
}

/** The local control plane's gateway: every change applies as soon as Traefik sees it. */
export const LOCAL_GATEWAY: GatewaySpec = {
  gatewayClass: 'konfidence-local',
  namespace: 'konfidence-gateway',
  name: 'local',
  throttleSeconds: 0,
};
export const GATEWAY_NAMESPACE = LOCAL_GATEWAY.namespace;
export const GATEWAY_NAME = LOCAL_GATEWAY.name;

/** The parentRef that attaches a route to a gateway. */
export const parentRefOf = (g: GatewaySpec) => ({
  group: 'gateway.networking.k8s.io',
  kind: 'Gateway',
  namespace: g.namespace,
  name: g.name,
});
export const GATEWAY_PARENT_REF = parentRefOf(LOCAL_GATEWAY);

export interface GatewayPorts {
  /** The `web` entry point: where requests go in (the Gateway's listener). */
  gateway: number;
  /** Traefik's own entry point: /ping for readiness. */
  gatewayAdmin: number;
  /** /metrics, which Prometheus scrapes. */
  gatewayMetrics: number;
}

const nameOf = (g: GatewaySpec) =>
  g === LOCAL_GATEWAY ? 'gateway' : `gateway-${g.gatewayClass}${g.host ? `-${g.host}` : ''}`;
const dirOf = (g: GatewaySpec) => join(stateDir, nameOf(g));

/**
 * Request durations down to milliseconds: the default buckets (0.1, 0.3, 1.2, 5 s) cannot tell a
 * p99 of 20 ms from one of 90 ms.
 */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Traefik's static configuration (YAML is JSON's superset). */
function staticConfig(p: GatewayPorts, g: GatewaySpec): object {
  const host = g.host ?? '127.0.0.1';
  return {
    entryPoints: {
      web: { address: `${host}:${p.gateway}` },
      traefik: { address: `${host}:${p.gatewayAdmin}` },
      metrics: { address: `${host}:${p.gatewayMetrics}` },
    },
    ping: { entryPoint: 'traefik' },
    metrics: {
      prometheus: { entryPoint: 'metrics', buckets: DURATION_BUCKETS, addServicesLabels: true, addRoutersLabels: true },
    },
    providers: {
      // A route change applies as soon as it is seen: the default throttles of 2 s would merge
      // the steps of a canary and delay every switch (a GatewaySpec may ask for the provider's).
      providersThrottleDuration: '0s',
      kubernetesGateway: {
        throttleDuration: `${g.throttleSeconds}s`,
        nativeLBByDefault: true,
        labelSelector: `${GATEWAY_LABEL}=${g.gatewayClass}`,
      },
    },
    log: { level: 'WARN', format: 'json' },
    global: { checkNewVersion: false, sendAnonymousUsage: false },
  };
}

export function startGateway(p: GatewayPorts, kubeconfig: string, g: GatewaySpec = LOCAL_GATEWAY): number {
  mkdirSync(dirOf(g), { recursive: true });
  const config = join(dirOf(g), 'traefik.yml');
  writeFileSync(config, JSON.stringify(staticConfig(p, g), null, 2));
  // Out of cluster, through the local kubeconfig (an in-cluster environment would win over it).
  const log = g === LOCAL_GATEWAY ? 'traefik' : `traefik-${nameOf(g).slice('gateway-'.length)}`;
  const pid = startDetached(log, binaries.traefik, [`--configFile=${config}`], {
    ...process.env,
    KUBECONFIG: kubeconfig,
    KUBERNETES_SERVICE_HOST: '',
  });
  // Another gateway (a test's) leaves its pid where env:down finds it, should its starter die first.
  if (g !== LOCAL_GATEWAY) writeFileSync(join(dirOf(g), 'pid'), String(pid));
  return pid;
}

/** The pids and folders of the gateways other than the local one (a test's), for env:down. */
export function otherGateways(): { pid: number | undefined; dir: string }[] {
  if (!existsSync(stateDir)) return [];
  return readdirSync(stateDir)
    .filter((d) => d.startsWith('gateway-'))
    .map((d) => {
      const dir = join(stateDir, d);
      const pid = existsSync(join(dir, 'pid')) ? Number(readFileSync(join(dir, 'pid'), 'utf8')) : undefined;
      return { pid: Number.isInteger(pid) ? pid : undefined, dir };
    });
}

/** Stops another gateway started by startGateway and removes its folder. */
export async function stopOtherGateway(pid: number | undefined, g: GatewaySpec): Promise<void> {
  await stopProcess(pid);
  rmSync(dirOf(g), { recursive: true, force: true });
}

/**
 * Traefik answers /ping once its providers have started, and runs the configuration wanted now (a
 * checkout that changed it restarts the gateway); the Gateway is applied separately (applyGateway).
 */
export async function gatewayReady(p: GatewayPorts, g: GatewaySpec = LOCAL_GATEWAY): Promise<boolean> {
  const running = (() => {
    try {
      return readFileSync(join(dirOf(g), 'traefik.yml'), 'utf8');
    } catch {
      return undefined;
    }
  })();
  if (running !== JSON.stringify(staticConfig(p, g), null, 2)) return false;
  return (await fetch(`http://${g.host ?? '127.0.0.1'}:${p.gatewayAdmin}/ping`)).ok;
}

/** The GatewayClass and the Gateway, its listener on the web entry point's port; idempotent. */
export async function applyGateway(kubeconfig: string, port: number, g: GatewaySpec = LOCAL_GATEWAY): Promise<void> {
  const kc = loadKubeConfig(kubeconfig);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: g.namespace } } }).catch((err: unknown) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  const manifests = [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: g.gatewayClass, labels: { [GATEWAY_LABEL]: g.gatewayClass } },
      spec: { controllerName: CONTROLLER_NAME },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: g.name, namespace: g.namespace },
      spec: {
        gatewayClassName: g.gatewayClass,
        listeners: [{ name: 'web', protocol: 'HTTP', port, allowedRoutes: { namespaces: { from: 'All' } } }],
      },
    },
  ];
  // Server-side apply: a port that changed since the last start is set, nothing else is touched.
  for (const m of manifests)
    await objects.patch(m, undefined, undefined, 'konfidence-env', true, k8s.PatchStrategy.ServerSideApply);
}

/** Waits until Traefik has accepted the Gateway and programmed its listener. */
export async function gatewayProgrammed(
  kubeconfig: string,
  g: GatewaySpec = LOCAL_GATEWAY,
  timeoutMs = 60_000,
): Promise<void> {
  const api = loadKubeConfig(kubeconfig).makeApiClient(k8s.CustomObjectsApi);
  await pollUntil(
    async () => {
      const gw = (await api.getNamespacedCustomObject({
        group: 'gateway.networking.k8s.io',
        version: 'v1',
        plural: 'gateways',
        namespace: g.namespace,
        name: g.name,
      })) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      const ok = (type: string) => gw.status?.conditions?.some((c) => c.type === type && c.status === 'True');
      return ok('Accepted') && ok('Programmed');
    },
    timeoutMs,
    `Gateway ${g.namespace}/${g.name} to be accepted and programmed by Traefik`,
    200,
  );
}
