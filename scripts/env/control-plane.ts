/**
 * `up` starts the local control plane (etcd, kube-apiserver, the Temporal dev server), reusing the
 * servers that already run and answer, installs the CRDs and writes .cache/env/env.sh; `down` stops
 * them. npm start, npm run env:up and jest's global setup all come through here.
 *
 * Three Temporal profiles: `dev` (default), the CLI's dev server on SQLite; `postgres`, the Temporal
 * server on a private PostgreSQL with the UI server, as docker-compose.yml runs them
 * (scripts/env/temporal-server.ts); `cluster`, the same server with its services as separate
 * processes, history twice (scripts/env/temporal-cluster.ts). Chosen by up's option, else
 * KONFIDENCE_TEMPORAL, else the profile the state folder already runs.
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
  SERVICE_CLUSTER_IP_RANGE,
  startApiserver,
  startControllerManager,
  startEtcd,
  startTemporal,
  TEMPORAL_NAMESPACE,
  TEMPORAL_NAMESPACES,
  TEST_TEMPORAL_NAMESPACE,
  temporalReady,
} from './components.js';
import { binaries, postgresProfileBinaries, repoRoot, stateDir } from './paths.js';
import { freeLowPort, reusePort } from './ports.js';
import { GiveUp, isAlive, logFile, logTail, pollUntil, stopProcess } from './process.js';
import { applyGateway, gatewayProgrammed, gatewayReady, otherGateways, startGateway } from './gateway.js';
import { installCrds } from './install-crds.js';
import { ensureCluster, postgresReady, startPostgres } from './postgres.js';
import { prometheusReady, scrape, startPrometheus } from './prometheus.js';
import {
  CLUSTER_SERVICES,
  clusterService,
  type ClusterPorts,
  serviceJoined,
  startClusterService,
} from './temporal-cluster.js';
import {
  setupNamespace,
  setupSchema,
  startTemporalServer,
  startTemporalUi,
  temporalServerReady,
  temporalUiReady,
} from './temporal-server.js';

export const TEMPORAL_PROFILES = ['dev', 'postgres', 'cluster'] as const;
export type TemporalProfile = (typeof TEMPORAL_PROFILES)[number];

export function isTemporalProfile(value: string | undefined): value is TemporalProfile {
  return (TEMPORAL_PROFILES as readonly string[]).includes(value ?? '');
}

export interface Pids {
  etcd?: number;
  apiserver?: number;
  controllerManager?: number;
  /** The dev server, in the postgres profile temporal-server, in the cluster profile its frontend. */
  temporal?: number;
  /** The cluster profile's other temporal-server processes. */
  temporalHistory?: number;
  temporalHistory2?: number;
  temporalMatching?: number;
  temporalWorker?: number;
  postgres?: number;
  temporalUi?: number;
  prometheus?: number;
  /** Traefik, the local gateway. */
  gateway?: number;
}

export interface ControlPlane {
  temporalProfile: TemporalProfile;
  ports: Ports;
  pids: Pids;
  kubeconfig: string;
  temporalAddress: string;
  temporalNamespace: string;
  /** The namespace of the tests (jest's global setup), apart from what a person looks at. */
  testTemporalNamespace: string;
  temporalUiUrl: string;
  /** Prometheus, for the analyses (KONFIDENCE_PROMETHEUS_URL). */
  prometheusUrl: string;
  /** Where requests go in to the local gateway (KONFIDENCE_GATEWAY_URL). */
  gatewayUrl: string;
  envFile: string;
}

const statePath = join(stateDir, 'state.json');
export const kubeconfigPath = join(stateDir, 'kubeconfig');
export const envFilePath = join(stateDir, 'env.sh');

interface State {
  /** Absent in state written before profiles existed: the dev server. */
  profile?: TemporalProfile;
  ports: Ports;
  pids: Pids;
}

function readState(): State | undefined {
  try {
    return JSON.parse(readFileSync(statePath, 'utf8'));
  } catch {
    return undefined;
  }
}

function writeState(state: State): void {
  writeFileSync(statePath, JSON.stringify(state, null, 2));
}

function describe(profile: TemporalProfile, ports: Ports, pids: Pids): ControlPlane {
  return {
    temporalProfile: profile,
    ports,
    pids,
    kubeconfig: kubeconfigPath,
    temporalAddress: `127.0.0.1:${ports.temporal}`,
    temporalNamespace: TEMPORAL_NAMESPACE,
    testTemporalNamespace: TEST_TEMPORAL_NAMESPACE,
    temporalUiUrl: `http://127.0.0.1:${ports.temporalUi}`,
    prometheusUrl: `http://127.0.0.1:${ports.prometheus}`,
    gatewayUrl: `http://127.0.0.1:${ports.gateway}`,
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

function ensureBinaries(profile: TemporalProfile, log: (line: string) => void): void {
  const needed = [...Object.values(binaries), ...(profile !== 'dev' ? Object.values(postgresProfileBinaries) : [])];
  if (needed.every((b) => existsSync(b))) return;
  log('building the local control plane binaries (first run only; minutes)...');
  // The build's lines go to stderr: on stdout they would mix into env:up --json's answer.
  // The dev profile needs no Temporal server, UI server or PostgreSQL: a first `npm start` builds less.
  execFileSync('bash', [join(repoRoot, 'scripts', 'install-binaries.sh'), ...(profile === 'dev' ? ['dev'] : [])], {
    stdio: ['ignore', process.stderr, 'inherit'],
  });
  const missing = needed.filter((b) => !existsSync(b));
  if (missing.length > 0)
    throw new Error(`install-binaries.sh did not provide ${missing.join(', ')} (see its output above)`);
}

function writeKubeconfig(ports: Ports): void {
  writeAdminKubeconfig(kubeconfigPath, 'konfidence-local', ports.apiserver);
}

/** A kubeconfig (mode 0600) for the local CA's admin at a kube-apiserver on 127.0.0.1:`port`. */
export function writeAdminKubeconfig(path: string, name: string, port: number): void {
  const b64 = (file: string) => readFileSync(file).toString('base64');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
  - name: ${name}
    cluster:
      server: https://127.0.0.1:${port}
      certificate-authority-data: ${b64(pki.caCert)}
users:
  - name: admin
    user:
      client-certificate-data: ${b64(pki.adminCert)}
      client-key-data: ${b64(pki.adminKey)}
contexts:
  - name: ${name}
    context: { cluster: ${name}, user: admin }
current-context: ${name}
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
export KONFIDENCE_PROMETHEUS_URL=${cp.prometheusUrl}
export KONFIDENCE_GATEWAY_URL=${cp.gatewayUrl}
export PATH=${dirname(binaries.kubectl)}:${dirname(binaries.temporal)}:$PATH
`,
  );
}

type Component = keyof Pids;

/** What each profile runs; `temporal` is the dev server (with its UI), temporal-server or the cluster's frontend. */
const componentsOf: Record<TemporalProfile, Component[]> = {
  dev: ['etcd', 'apiserver', 'controllerManager', 'temporal', 'prometheus', 'gateway'],
  postgres: ['etcd', 'apiserver', 'controllerManager', 'postgres', 'temporal', 'temporalUi', 'prometheus', 'gateway'],
  cluster: [
    'etcd',
    'apiserver',
    'controllerManager',
    'postgres',
    ...CLUSTER_SERVICES.map((s) => s.component),
    'temporalUi',
    'prometheus',
    'gateway',
  ],
};

/** The processes of the Temporal side, besides PostgreSQL: stopped when the profile changes or goes down. */
const TEMPORAL_SIDE: Component[] = ['temporalUi', ...CLUSTER_SERVICES.map((s) => s.component)];

/** A Ports of the postgres or cluster profile has every port temporal-server needs. */
const serverPorts = (ports: Ports) => ports as Ports & ClusterPorts;

async function healthOf(profile: TemporalProfile, ports: Ports, pids: Pids): Promise<Record<Component, boolean>> {
  const checks: Record<Component, () => Promise<boolean>> = {
    etcd: () => etcdReady(ports),
    apiserver: () => apiserverReady(ports),
    controllerManager: () => controllerManagerReady(ports),
    temporal: () => (profile === 'dev' ? temporalReady(ports) : temporalServerReady(ports)),
    postgres: () => postgresReady(serverPorts(ports).postgres),
    temporalUi: () => temporalUiReady(ports),
    prometheus: () => prometheusReady(ports.prometheus),
    gateway: () => gatewayReady(ports),
    temporalHistory: () => serviceJoined(clusterService('temporalHistory')!, serverPorts(ports)),
    temporalHistory2: () => serviceJoined(clusterService('temporalHistory2')!, serverPorts(ports)),
    temporalMatching: () => serviceJoined(clusterService('temporalMatching')!, serverPorts(ports)),
    temporalWorker: () => serviceJoined(clusterService('temporalWorker')!, serverPorts(ports)),
  };
  const health = {} as Record<Component, boolean>;
  for (const c of componentsOf[profile]) health[c] = isAlive(pids[c]) && (await answers(checks[c]));
  return health;
}

const portsOf: Record<TemporalProfile, Partial<Record<Component, (keyof ClusterPorts | keyof Ports)[]>>> = {
  dev: {
    etcd: ['etcdClient', 'etcdPeer'],
    apiserver: ['apiserver'],
    controllerManager: ['controllerManager'],
    temporal: ['temporal', 'temporalUi', 'temporalHttp', 'temporalMetrics'],
    postgres: [],
    temporalUi: [],
    prometheus: ['prometheus'],
    gateway: ['gateway', 'gatewayAdmin', 'gatewayMetrics'],
  },
  postgres: {
    etcd: ['etcdClient', 'etcdPeer'],
    apiserver: ['apiserver'],
    controllerManager: ['controllerManager'],
    postgres: ['postgres'],
    // temporal-server listens on all of these (config/postgres.yaml).
    temporal: [
      'temporal',
      'temporalHttp',
      'temporalMetrics',
      'frontendMembership',
      'historyGrpc',
      'historyMembership',
      'matchingGrpc',
      'matchingMembership',
      'workerGrpc',
      'workerMembership',
    ],
    temporalUi: ['temporalUi'],
    prometheus: ['prometheus'],
    gateway: ['gateway', 'gatewayAdmin', 'gatewayMetrics'],
  },
  cluster: {
    etcd: ['etcdClient', 'etcdPeer'],
    apiserver: ['apiserver'],
    controllerManager: ['controllerManager'],
    postgres: ['postgres'],
    ...Object.fromEntries(CLUSTER_SERVICES.map((s) => [s.component, s.ports])),
    temporalUi: ['temporalUi'],
    prometheus: ['prometheus'],
    gateway: ['gateway', 'gatewayAdmin', 'gatewayMetrics'],
  },
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
async function start(
  profile: TemporalProfile,
  restart: Set<Component>,
  previous: Ports | undefined,
  pids: Pids,
  log: (line: string) => void,
): Promise<Ports> {
  const ports = { ...(previous ?? {}) } as Ports & Partial<ClusterPorts>;
  // Every server's port lies below the kernel's ephemeral range (freeLowPort): a port kept across a
  // restart cannot be taken meanwhile as the local port of some outgoing connection, and
  // temporal-server's schema stores its ports as SMALLINT. A port kept from before this rule
  // (32768 and up) is chosen anew.
  for (const c of restart) {
    for (const key of portsOf[profile][c] ?? []) {
      const before = previous?.[key as keyof Ports];
      ports[key] = await reusePort(before && before >= 32_768 ? undefined : before, 5_000, freeLowPort);
    }
  }
  if (new Set(Object.values(ports)).size !== Object.keys(ports).length) {
    // A previous port of what restarts is taken by another of ours: choose new ones for all of them.
    const others = { ...previous } as Record<string, number>;
    for (const c of restart) for (const key of portsOf[profile][c] ?? []) delete others[key];
    return start(profile, restart, others as unknown as Ports, pids, log);
  }
  ensurePki();
  mkdirSync(dataDir, { recursive: true });
  log(`starting ${[...restart].join(', ')}...`);
  const persist = () => writeState({ profile, ports, pids });
  if (profile === 'dev' && restart.has('temporal')) pids.temporal = startTemporal(ports);
  if (restart.has('prometheus')) pids.prometheus = startPrometheus(ports.prometheus);
  const temporalServer =
    profile !== 'dev' ? startOnPostgres(profile, restart, serverPorts(ports), pids, persist) : Promise.resolve();
  // Awaited below; until then a failure must not count as unhandled.
  temporalServer.catch(() => undefined);
  if (restart.has('etcd')) {
    if (!storeOfRange()) rmSync(join(dataDir, 'etcd'), { recursive: true, force: true });
    pids.etcd = startEtcd(ports);
    writeFileSync(storeRangeFile, SERVICE_CLUSTER_IP_RANGE);
    await ready('etcd', pids.etcd, () => etcdReady(ports), 30_000);
  }
  if (restart.has('apiserver')) pids.apiserver = startApiserver(ports);
  // Persist the pids at once so that `down` can stop what started even if readiness fails.
  persist();
  if (restart.has('apiserver')) await ready('kube-apiserver', pids.apiserver!, () => apiserverReady(ports), 90_000);
  if (restart.has('controllerManager')) {
    writeKubeconfig(ports);
    pids.controllerManager = startControllerManager(ports, kubeconfigPath);
    persist();
    await ready('kube-controller-manager', pids.controllerManager, () => controllerManagerReady(ports), 60_000);
  }
  if (profile === 'dev' && restart.has('temporal'))
    await ready('temporal', pids.temporal!, () => temporalReady(ports), 90_000);
  if (restart.has('prometheus'))
    await ready('prometheus', pids.prometheus!, () => prometheusReady(ports.prometheus), 60_000);
  await temporalServer;
  return ports;
}

/**
 * The postgres and cluster profiles' Temporal side, beside the Kubernetes side: PostgreSQL, then
 * the schema (before every start of temporal-server or of the cluster's frontend, as
 * docker-compose's admin-tools service runs before the server), then temporal-server (in the
 * cluster profile, each service that restarts) and the UI server.
 */
async function startOnPostgres(
  profile: TemporalProfile,
  restart: Set<Component>,
  ports: ClusterPorts,
  pids: Pids,
  persist: () => void,
): Promise<void> {
  if (restart.has('postgres')) {
    ensureCluster();
    pids.postgres = startPostgres(ports.postgres);
    persist();
    await ready('postgresql', pids.postgres, () => postgresReady(ports.postgres), 60_000);
  }
  if (restart.has('temporal')) await setupSchema(ports);
  if (profile === 'postgres' && restart.has('temporal')) pids.temporal = startTemporalServer(ports);
  const services = profile === 'cluster' ? CLUSTER_SERVICES.filter((s) => restart.has(s.component)) : [];
  // A process that joins the ring is told from its predecessor on the same port by its session's start.
  const since = new Date();
  for (const s of services) pids[s.component] = startClusterService(s, ports);
  persist();
  if (restart.has('temporalUi')) {
    pids.temporalUi = startTemporalUi(ports);
    persist();
  }
  if (profile === 'postgres' && restart.has('temporal'))
    await ready('temporal-server', pids.temporal!, () => temporalServerReady(ports), 90_000);
  // The frontend answers, and every service that started heartbeats in the ring: both history hosts
  // are members when `up` returns.
  await Promise.all(
    services.map((s) =>
      ready(
        s.name,
        pids[s.component]!,
        async () => (s.service !== 'frontend' || (await temporalServerReady(ports))) && serviceJoined(s, ports, since),
        90_000,
      ),
    ),
  );
  if (restart.has('temporalUi')) await ready('temporal-ui', pids.temporalUi!, () => temporalUiReady(ports), 30_000);
}

/**
 * The Service range the Kubernetes store was made with: the apiserver never updates its default
 * ServiceCIDR once created, so a store made with another range (before the gateway's loopback one)
 * would keep allocating ClusterIPs the gateway cannot reach. Such a store starts afresh.
 */
const storeRangeFile = join(dataDir, 'etcd-service-range');

function storeOfRange(): boolean {
  if (!existsSync(join(dataDir, 'etcd'))) return true;
  try {
    return readFileSync(storeRangeFile, 'utf8') === SERVICE_CLUSTER_IP_RANGE;
  } catch {
    return false;
  }
}

/** The gateway, once the Gateway API CRDs it watches are installed: Traefik, its Gateway, its scrape target. */
async function startGatewayAfterCrds(restart: boolean, ports: Ports, pids: Pids, persist: () => void): Promise<void> {
  if (restart) {
    pids.gateway = startGateway(ports, kubeconfigPath);
    persist();
    await ready('traefik', pids.gateway, () => gatewayReady(ports), 60_000);
  }
  await applyGateway(kubeconfigPath, ports.gateway);
  scrape('gateway', [`127.0.0.1:${ports.gatewayMetrics}`], { component: 'gateway' });
  await gatewayProgrammed(kubeconfigPath);
}

export interface UpResult extends ControlPlane {
  /** False when every server was already running and was reused. */
  started: boolean;
}

/** The profile `up` runs: the option, else KONFIDENCE_TEMPORAL, else the state folder's, else dev. */
function chooseProfile(option: string | undefined, state: State | undefined): TemporalProfile {
  const chosen = option ?? process.env.KONFIDENCE_TEMPORAL ?? state?.profile ?? 'dev';
  if (!isTemporalProfile(chosen)) {
    throw new Error(
      `unknown Temporal profile "${chosen}" (--temporal or KONFIDENCE_TEMPORAL): choose ${TEMPORAL_PROFILES.join(' or ')}`,
    );
  }
  return chosen;
}

/** Stops the Temporal side of the profile the state folder ran before (its servers answer elsewhere). */
async function stopOtherProfile(pids: Pids): Promise<void> {
  await Promise.all(TEMPORAL_SIDE.map((c) => stopProcess(pids[c])));
  await stopProcess(pids.postgres, 10_000, 'SIGINT');
  for (const c of [...TEMPORAL_SIDE, 'postgres' as const]) delete pids[c];
}

export interface UpOptions {
  /** Which Temporal runs; see chooseProfile. */
  temporal?: string;
}

export function up(log: (line: string) => void = console.log, options: UpOptions = {}): Promise<UpResult> {
  return withLock(async () => {
    mkdirSync(stateDir, { recursive: true });
    const state = readState();
    const profile = chooseProfile(options.temporal, state);
    ensureBinaries(profile, log);
    const pids: Pids = { ...(state?.pids ?? {}) };
    if (state && (state.profile ?? 'dev') !== profile) {
      log(`switching Temporal from the ${state.profile ?? 'dev'} profile to ${profile}...`);
      await stopOtherProfile(pids);
    }
    const health = state?.ports
      ? await healthOf(profile, state.ports, pids)
      : (Object.fromEntries(componentsOf[profile].map((c) => [c, false])) as Record<Component, boolean>);
    // Restart only what is down; the apiserver goes with etcd, temporal-server with PostgreSQL.
    const restart = new Set<Component>((Object.keys(health) as Component[]).filter((c) => !health[c]));
    if (!storeOfRange()) {
      log(
        `the Kubernetes store was made with another Service range than ${SERVICE_CLUSTER_IP_RANGE}: it starts afresh`,
      );
      restart.add('etcd');
    }
    if (restart.has('etcd')) restart.add('apiserver');
    if (restart.has('apiserver')) restart.add('controllerManager');
    // The gateway reads the apiserver through the kubeconfig, whose port may change.
    if (restart.has('apiserver')) restart.add('gateway');
    if (restart.has('postgres')) for (const c of componentsOf[profile]) if (TEMPORAL_SIDE.includes(c)) restart.add(c);
    // The UI server knows the frontend by its port, which may change.
    if (restart.has('temporal') && profile !== 'dev') restart.add('temporalUi');
    let ports = state?.ports;
    if (restart.size > 0) {
      // Stop leftovers of what restarts (clients first, storage last).
      await Promise.all([...restart].filter((c) => c !== 'etcd' && c !== 'postgres').map((c) => stopProcess(pids[c])));
      await Promise.all([
        restart.has('etcd') && stopProcess(pids.etcd),
        restart.has('postgres') && stopProcess(pids.postgres, 10_000, 'SIGINT'),
      ]);
      ports = await start(profile, restart, ports, pids, log);
    }
    writeState({ profile, ports: ports!, pids });
    // The dev server creates its namespace; temporal-server's is made as docker-compose makes it.
    if (profile !== 'dev')
      for (const namespace of TEMPORAL_NAMESPACES) await setupNamespace(serverPorts(ports!), namespace);
    await ensureSearchAttributes(ports!);
    writeKubeconfig(ports!);
    const cp = describe(profile, ports!, pids);
    writeEnvFile(cp);
    await installCrds(kubeconfigPath);
    await startGatewayAfterCrds(restart.has('gateway'), ports!, pids, () =>
      writeState({ profile, ports: ports!, pids }),
    );
    return { ...cp, started: restart.size > 0 };
  });
}

async function stopAll(pids: Pids): Promise<void> {
  // Clients first, storage last, so the apiserver does not spin on a vanished etcd. PostgreSQL's
  // SIGTERM would wait for every client to leave; SIGINT is its fast shutdown.
  await Promise.all([
    stopProcess(pids.gateway),
    stopProcess(pids.controllerManager),
    stopProcess(pids.apiserver),
    stopProcess(pids.prometheus),
    ...TEMPORAL_SIDE.map((c) => stopProcess(pids[c])),
  ]);
  await Promise.all([stopProcess(pids.etcd), stopProcess(pids.postgres, 10_000, 'SIGINT')]);
}

export function down(): Promise<boolean> {
  return withLock(async () => {
    const state = readState();
    const wasRunning = Object.values(state?.pids ?? {}).some((pid) => isAlive(pid));
    if (!state) return false;
    await stopAll(state.pids);
    // A test's own gateways, left behind when the test's process died before its afterAll.
    await Promise.all(
      otherGateways().map(async ({ pid, dir }) => {
        await stopProcess(pid);
        rmSync(dir, { recursive: true, force: true });
      }),
    );
    // Keep the ports: the next `up` serves on the same addresses (the UI link stays valid).
    writeState({ profile: state.profile, ports: state.ports, pids: {} });
    return wasRunning;
  });
}

/** The control plane as env:up left it (pids are empty after env:down), or undefined. */
export function current(): ControlPlane | undefined {
  const state = readState();
  return state ? describe(state.profile ?? 'dev', state.ports, state.pids) : undefined;
}
