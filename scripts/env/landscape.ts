/**
 * A landscape cluster on 127.0.0.1 (docs/landscapes.md): its own etcd, kube-apiserver and
 * kube-controller-manager, with the route CRDs (Gateway API, Istio) and none of the project's. `npm run env:up -- --landscape NAME`
 * keeps one in .cache/env/landscapes/NAME (reused while it runs, stopped by env:down);
 * test/support/landscape-cluster.ts starts one in a temporary folder. It signs with the local
 * control plane's CA (certs.ts): its serving certificate is the same 127.0.0.1 one.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyCrds } from '../../k8s/crds.js';
import { loadKubeConfig, type k8s } from '../../k8s/client.js';
import { routeCrds } from '../route-crds.js';
import { adminGet, apiserverArgs, controllerManagerArgs, controllerManagerReady, etcdArgs } from './components.js';
import { writeAdminKubeconfig } from './control-plane.js';
import { binaries, stateDir } from './paths.js';
import { isAlive, pollUntil, startDetached, stopProcess } from './process.js';
import { freeLowPort } from './ports.js';

/** The Services' ClusterIPs of a landscape: a loopback range apart from the control plane's. */
const LANDSCAPE_SERVICE_RANGE = '127.201.0.0/16';

export interface LandscapePorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
}

export interface LandscapeServers {
  name: string;
  dir: string;
  ports: LandscapePorts;
  pids: { etcd?: number; apiserver?: number; controllerManager?: number };
  /** A kubeconfig of this cluster only, as the landscape's admin. */
  kubeconfig: string;
}

/** Where env:up keeps a landscape. */
export const landscapesDir = join(stateDir, 'landscapes');

const apiserverReady = async (port: number) =>
  (await adminGet(port, '/readyz').catch(() => 0)) === 200 &&
  (await adminGet(port, '/api/v1/namespaces/default').catch(() => 0)) === 200;

/** Starts the landscape's kube-apiserver (its etcd runs) and waits until it answers. */
export async function startLandscapeApiserver(servers: LandscapeServers): Promise<void> {
  const { name, dir, ports } = servers;
  servers.pids.apiserver = startDetached(
    `landscape-${name}-apiserver`,
    binaries.kubeApiserver,
    apiserverArgs({
      etcdClientPort: ports.etcdClient,
      port: ports.apiserver,
      certDir: join(dir, 'certs'),
      serviceRange: LANDSCAPE_SERVICE_RANGE,
    }),
  );
  await pollUntil(
    async () => (await apiserverReady(ports.apiserver)) || undefined,
    120_000,
    `the landscape ${name}'s kube-apiserver`,
    200,
  );
}

/**
 * Starts the landscape's etcd and kube-apiserver with data in `dir`, on ports below the ephemeral
 * range (an apiserver restarted after an outage gets its port back), writes its kubeconfig and
 * installs the route CRDs.
 */
export async function startLandscapeServers(name: string, dir: string): Promise<LandscapeServers> {
  mkdirSync(dir, { recursive: true });
  const ports = {
    etcdClient: await freeLowPort(),
    etcdPeer: await freeLowPort(),
    apiserver: await freeLowPort(),
    controllerManager: await freeLowPort(),
  };
  const servers: LandscapeServers = { name, dir, ports, pids: {}, kubeconfig: join(dir, 'kubeconfig') };
  servers.pids.etcd = startDetached(
    `landscape-${name}-etcd`,
    binaries.etcd,
    etcdArgs({ name, dataDir: join(dir, 'etcd'), clientPort: ports.etcdClient, peerPort: ports.etcdPeer }),
  );
  try {
    await startLandscapeApiserver(servers);
    writeAdminKubeconfig(servers.kubeconfig, name, ports.apiserver);
    // Namespaces deleted and owned objects collected, as in a real cluster.
    servers.pids.controllerManager = startDetached(
      `landscape-${name}-controller-manager`,
      binaries.kubeControllerManager,
      controllerManagerArgs({
        kubeconfig: servers.kubeconfig,
        port: ports.controllerManager,
        certDir: join(dir, 'controller-manager-certs'),
      }),
    );
    await applyCrds(loadKubeConfig(servers.kubeconfig), routeCrds());
    await pollUntil(
      async () => (await controllerManagerReady(ports).catch(() => false)) || undefined,
      60_000,
      `the landscape ${name}'s kube-controller-manager`,
      200,
    );
    return servers;
  } catch (err) {
    await stopLandscapeServers(servers);
    throw err;
  }
}

/** Stops the controller-manager and the apiserver, then their etcd; the data stays. */
export async function stopLandscapeServers(servers: Pick<LandscapeServers, 'pids'>): Promise<void> {
  await stopProcess(servers.pids.controllerManager);
  await stopProcess(servers.pids.apiserver);
  await stopProcess(servers.pids.etcd);
}

const statePath = (name: string) => join(landscapesDir, name, 'state.json');

function readLandscape(name: string): LandscapeServers | undefined {
  try {
    return JSON.parse(readFileSync(statePath(name), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * env:up's landscape: the one that runs, or a new one (a landscape half up or gone starts afresh,
 * its data with it: it holds only the routes of a local try).
 */
export async function upLandscape(name: string): Promise<LandscapeServers & { started: boolean; kc: k8s.KubeConfig }> {
  const running = readLandscape(name);
  if (
    running?.ports.controllerManager !== undefined &&
    isAlive(running.pids.etcd) &&
    isAlive(running.pids.controllerManager) &&
    (await apiserverReady(running.ports.apiserver))
  )
    return { ...running, started: false, kc: loadKubeConfig(running.kubeconfig) };
  if (running) await stopLandscapeServers(running);
  const dir = join(landscapesDir, name);
  rmSync(dir, { recursive: true, force: true });
  const servers = await startLandscapeServers(name, dir);
  writeFileSync(statePath(name), JSON.stringify(servers, null, 2));
  return { ...servers, started: true, kc: loadKubeConfig(servers.kubeconfig) };
}

/** env:down: stops every landscape env:up started; their data stays until the next up. */
export async function downLandscapes(): Promise<string[]> {
  if (!existsSync(landscapesDir)) return [];
  const stopped: string[] = [];
  for (const name of readdirSync(landscapesDir)) {
    const servers = readLandscape(name);
    if (!servers || !Object.values(servers.pids).some((pid) => isAlive(pid))) continue;
    await stopLandscapeServers(servers);
    stopped.push(name);
  }
  return stopped;
}
