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
  dataDir,
  ensureSearchAttributes,
  etcdReady,
  type Ports,
  startApiserver,
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

async function running(ports: Ports, pids: Pids): Promise<boolean> {
  return (
    isAlive(pids.etcd) &&
    isAlive(pids.apiserver) &&
    isAlive(pids.temporal) &&
    (await answers(() => etcdReady(ports))) &&
    (await answers(() => apiserverReady(ports))) &&
    (await answers(() => temporalReady(ports)))
  );
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

async function start(previous: Ports | undefined, log: (line: string) => void): Promise<{ ports: Ports; pids: Pids }> {
  const ports: Ports = {
    etcdClient: await reusePort(previous?.etcdClient),
    etcdPeer: await reusePort(previous?.etcdPeer),
    apiserver: await reusePort(previous?.apiserver),
    temporal: await reusePort(previous?.temporal),
    temporalUi: await reusePort(previous?.temporalUi),
    temporalHttp: await reusePort(previous?.temporalHttp),
    temporalMetrics: await reusePort(previous?.temporalMetrics),
  };
  if (new Set(Object.values(ports)).size !== Object.keys(ports).length) return start(undefined, log);
  ensurePki();
  mkdirSync(dataDir, { recursive: true });
  const pids: Pids = {};
  const ready = async (name: string, pid: number, check: () => Promise<boolean>, timeoutMs: number) => {
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
  };
  log('starting etcd, kube-apiserver and the Temporal dev server...');
  pids.temporal = startTemporal(ports);
  pids.etcd = startEtcd(ports);
  await ready('etcd', pids.etcd, () => etcdReady(ports), 30_000);
  pids.apiserver = startApiserver(ports);
  // Persist the pids at once so that `down` can stop what started even if readiness fails.
  writeFileSync(statePath, JSON.stringify({ ports, pids }, null, 2));
  await ready('kube-apiserver', pids.apiserver, () => apiserverReady(ports), 90_000);
  await ready('temporal', pids.temporal, () => temporalReady(ports), 90_000);
  return { ports, pids };
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
    let started = false;
    let ports = state?.ports;
    let pids = state?.pids ?? {};
    if (!ports || !(await running(ports, pids))) {
      await stopAll(pids);
      ({ ports, pids } = await start(ports, log));
      started = true;
    }
    writeFileSync(statePath, JSON.stringify({ ports, pids }, null, 2));
    await ensureSearchAttributes(ports);
    writeKubeconfig(ports);
    const cp = describe(ports, pids);
    writeEnvFile(cp);
    await installCrds(kubeconfigPath);
    return { ...cp, started };
  });
}

async function stopAll(pids: Pids): Promise<void> {
  // Clients first, storage last, so the apiserver does not spin on a vanished etcd.
  await Promise.all([stopProcess(pids.apiserver), stopProcess(pids.temporal)]);
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

