/**
 * `up` starts the local control plane (etcd, kube-apiserver, the Temporal dev server), reusing the
 * servers that already run and answer, installs the CRDs and writes .cache/env/env.sh; `down` stops
 * them. npm start, npm run env:up and jest's global setup all come through here.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensurePki, pki } from './certs.js';
import {
  apiserverReady,
  controllerManagerReady,
  dataDir,
  ensureSearchAttributes,
  etcdReady,
  type Ports,
  startApiserver,
  startControllerManager,
  startEtcd,
  startTemporal,
  TEMPORAL_NAMESPACE,
  temporalReady,
} from './components.js';
import { binaries, repoRoot, stateDir } from './paths.js';
import { reusePort } from './ports.js';
import { GiveUp, isAlive, logFile, logTail, pollUntil, stopProcess } from './process.js';
import { installCrds } from './install-crds.js';

export interface Pids {
  etcd?: number;
  apiserver?: number;
  controllerManager?: number;
  temporal?: number;
}

export interface ControlPlane {
  ports: Ports;
  pids: Pids;
  kubeconfig: string;
  temporalAddress: string;
  temporalNamespace: string;
  temporalUiUrl: string;
  envFile: string;
}

const statePath = join(stateDir, 'state.json');
export const kubeconfigPath = join(stateDir, 'kubeconfig');
export const envFilePath = join(stateDir, 'env.sh');

function readState(): { ports: Ports; pids: Pids } | undefined {
  try {
    return JSON.parse(readFileSync(statePath, 'utf8'));
  } catch {
    return undefined;
  }
}

function describe(ports: Ports, pids: Pids): ControlPlane {
  return {
    ports,
    pids,
    kubeconfig: kubeconfigPath,
    temporalAddress: `127.0.0.1:${ports.temporal}`,
    temporalNamespace: TEMPORAL_NAMESPACE,
    temporalUiUrl: `http://127.0.0.1:${ports.temporalUi}`,
    envFile: envFilePath,
  };
}

async function answers(check: () => Promise<boolean>): Promise<boolean> {
  try {
    return await check();
  } catch {
    return false;
  }
}

/** Serializes `up` and `down` between processes (npm start and jest may run at once). */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(stateDir, 'lock');
  mkdirSync(stateDir, { recursive: true });
  await pollUntil(
    () => {
      try {
        closeSync(openSync(lock, 'wx'));
        writeFileSync(lock, String(process.pid));
        return true;
      } catch {
        const holder = Number(readFileSync(lock, 'utf8') || 0);
        // A lock left behind by a process that died is taken over.
        if (holder && !isAlive(holder)) rmSync(lock, { force: true });
        return false;
      }
    },
    180_000,
    `the control-plane lock ${lock}`,
    200,
  );
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

function ensureBinaries(log: (line: string) => void): void {
  if (Object.values(binaries).every((b) => existsSync(b))) return;
  log('building the local control plane binaries (first run only; minutes)...');
  execFileSync('bash', [join(repoRoot, 'scripts', 'install-binaries.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
}

function writeKubeconfig(ports: Ports): void {
  const b64 = (file: string) => readFileSync(file).toString('base64');
  writeFileSync(
    kubeconfigPath,
    `apiVersion: v1
kind: Config
clusters:
  - name: konfidence-local
    cluster:
      server: https://127.0.0.1:${ports.apiserver}
      certificate-authority-data: ${b64(pki.caCert)}
users:
  - name: admin
    user:
      client-certificate-data: ${b64(pki.adminCert)}
      client-key-data: ${b64(pki.adminKey)}
contexts:
  - name: konfidence-local
    context: { cluster: konfidence-local, user: admin }
current-context: konfidence-local
`,
    { mode: 0o600 },
  );
}

function writeEnvFile(cp: ControlPlane): void {
  writeFileSync(
    envFilePath,
    `# Written by npm run env:up. Use: source ${envFilePath}
export KUBECONFIG=${cp.kubeconfig}
export TEMPORAL_ADDRESS=${cp.temporalAddress}
export TEMPORAL_NAMESPACE=${cp.temporalNamespace}
export TEMPORAL_UI_URL=${cp.temporalUiUrl}
export PATH=${dirname(binaries.kubectl)}:${dirname(binaries.temporal)}:$PATH
`,
  );
}

type Component = 'etcd' | 'apiserver' | 'controllerManager' | 'temporal';

async function healthOf(ports: Ports, pids: Pids): Promise<Record<Component, boolean>> {
  return {
    etcd: isAlive(pids.etcd) && (await answers(() => etcdReady(ports))),
    apiserver: isAlive(pids.apiserver) && (await answers(() => apiserverReady(ports))),
    controllerManager: isAlive(pids.controllerManager) && (await answers(() => controllerManagerReady(ports))),
    temporal: isAlive(pids.temporal) && (await answers(() => temporalReady(ports))),
  };
}

const portsOf: Record<Component, (keyof Ports)[]> = {
  etcd: ['etcdClient', 'etcdPeer'],
  apiserver: ['apiserver'],
  controllerManager: ['controllerManager'],
  temporal: ['temporal', 'temporalUi', 'temporalHttp', 'temporalMetrics'],
};

async function ready(name: string, pid: number, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await pollUntil(
    async () => {
      if (!isAlive(pid)) throw new GiveUp(`${name} exited`);
      return check();
    },
    timeoutMs,
    `${name} to become ready`,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n--- ${logFile(name)} ---\n${logTail(name)}`);
  });
}

/**
 * Starts the given components (the others keep running), on their previous ports when free.
 * Callers include the apiserver whenever etcd restarts: it cannot outlive its store.
 */
async function start(restart: Set<Component>, previous: Ports | undefined, pids: Pids, log: (line: string) => void): Promise<Ports> {
  const ports = { ...(previous ?? {}) } as Ports;
  for (const c of restart) for (const key of portsOf[c]) ports[key] = await reusePort(previous?.[key]);
  if (new Set(Object.values(ports)).size !== Object.keys(ports).length) return start(restart, undefined, pids, log);
  ensurePki();
  mkdirSync(dataDir, { recursive: true });
  log(`starting ${[...restart].join(', ')}...`);
  if (restart.has('temporal')) pids.temporal = startTemporal(ports);
  if (restart.has('etcd')) {
    pids.etcd = startEtcd(ports);
    await ready('etcd', pids.etcd, () => etcdReady(ports), 30_000);
  }
  if (restart.has('apiserver')) pids.apiserver = startApiserver(ports);
  // Persist the pids at once so that `down` can stop what started even if readiness fails.
  writeFileSync(statePath, JSON.stringify({ ports, pids }, null, 2));
  if (restart.has('apiserver')) await ready('kube-apiserver', pids.apiserver!, () => apiserverReady(ports), 90_000);
  if (restart.has('controllerManager')) {
    writeKubeconfig(ports);
    pids.controllerManager = startControllerManager(ports, kubeconfigPath);
    writeFileSync(statePath, JSON.stringify({ ports, pids }, null, 2));
    await ready('kube-controller-manager', pids.controllerManager, () => controllerManagerReady(ports), 60_000);
  }
  if (restart.has('temporal')) await ready('temporal', pids.temporal!, () => temporalReady(ports), 90_000);
  return ports;
}

export interface UpResult extends ControlPlane {
  /** False when every server was already running and was reused. */
  started: boolean;
}

export function up(log: (line: string) => void = console.log): Promise<UpResult> {
  return withLock(async () => {
    ensureBinaries(log);
    mkdirSync(stateDir, { recursive: true });
    const state = readState();
    const pids: Pids = { ...(state?.pids ?? {}) };
    const health = state?.ports
      ? await healthOf(state.ports, pids)
      : { etcd: false, apiserver: false, controllerManager: false, temporal: false };
    // Restart only what is down; the apiserver goes with etcd.
    const restart = new Set<Component>((Object.keys(health) as Component[]).filter((c) => !health[c]));
    if (restart.has('etcd')) restart.add('apiserver');
    if (restart.has('apiserver')) restart.add('controllerManager');
    let ports = state?.ports;
    if (restart.size > 0) {
      // Stop leftovers of what restarts (clients first, storage last).
      await Promise.all([
        restart.has('controllerManager') && stopProcess(pids.controllerManager),
        restart.has('apiserver') && stopProcess(pids.apiserver),
        restart.has('temporal') && stopProcess(pids.temporal),
      ]);
      if (restart.has('etcd')) await stopProcess(pids.etcd);
      ports = await start(restart, ports, pids, log);
    }
    writeFileSync(statePath, JSON.stringify({ ports, pids }, null, 2));
    await ensureSearchAttributes(ports!);
    writeKubeconfig(ports!);
    const cp = describe(ports!, pids);
    writeEnvFile(cp);
    await installCrds(kubeconfigPath);
    return { ...cp, started: restart.size > 0 };
  });
}

async function stopAll(pids: Pids): Promise<void> {
  // Clients first, storage last, so the apiserver does not spin on a vanished etcd.
  await Promise.all([stopProcess(pids.controllerManager), stopProcess(pids.apiserver), stopProcess(pids.temporal)]);
  await stopProcess(pids.etcd);
}

export function down(): Promise<boolean> {
  return withLock(async () => {
    const state = readState();
    const wasRunning = Object.values(state?.pids ?? {}).some((pid) => isAlive(pid));
    if (!state) return false;
    await stopAll(state.pids);
    // Keep the ports: the next `up` serves on the same addresses (the UI link stays valid).
    writeFileSync(statePath, JSON.stringify({ ports: state.ports, pids: {} }, null, 2));
    return wasRunning;
  });
}

/** The control plane as env:up left it (pids are empty after env:down), or undefined. */
export function current(): ControlPlane | undefined {
  const state = readState();
  return state ? describe(state.ports, state.pids) : undefined;
}

