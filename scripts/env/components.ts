/**
 * The three servers of the local control plane: how each starts and how to tell it is ready.
 * Flags follow controller-runtime's envtest; the Temporal dev server is the CLI's `server start-dev`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
// The SDK's own Duration conversion (a protobuf Long), as @temporalio/testing registers namespaces.
import time from '@temporalio/common/lib/time.js';
import { searchAttributes } from '../../shared/search-attributes.js';

type SearchAttribute = (typeof searchAttributes)[number];
import { pki } from './certs.js';
import { binaries, stateDir } from './paths.js';
import { logDir, pollUntil, startDetached } from './process.js';

export interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  temporal: number;
  temporalUi: number;
  temporalHttp: number;
  temporalMetrics: number;
  prometheus: number;
  /** The gateway's entry points (gateway.ts GatewayPorts). */
  gateway: number;
  gatewayAdmin: number;
  gatewayMetrics: number;
}

/**
 * The Services' ClusterIPs: a loopback range, so that the local gateway's native load balancing
 * sends every request to an address on 127.0.0.0/8, where the test apps listen (gateway.ts). The
 * apiserver refuses loopback endpoints, not loopback ClusterIPs. Its own `kubernetes` Service gets
 * 127.200.0.1 and logs that its endpoint is invalid: nothing here uses it.
 */
export const SERVICE_CLUSTER_IP_RANGE = '127.200.0.0/16';

export const TEMPORAL_NAMESPACE = 'default';
/**
 * The tests' Temporal namespace on the same server: `npm start`'s sample and what a person looks at
 * in the UI (namespace default) never show the workflows of test runs.
 */
export const TEST_TEMPORAL_NAMESPACE = 'konfidence-test';
export const TEMPORAL_NAMESPACES = [TEMPORAL_NAMESPACE, TEST_TEMPORAL_NAMESPACE] as const;

export const dataDir = join(stateDir, 'data');

/** An etcd of one member on 127.0.0.1: the control plane's, or a landscape's (landscape.ts). */
export function etcdArgs(o: { name: string; dataDir: string; clientPort: number; peerPort: number }): string[] {
  const peer = `http://127.0.0.1:${o.peerPort}`;
  const client = `http://127.0.0.1:${o.clientPort}`;
  return [
    `--name=${o.name}`,
    `--data-dir=${o.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${o.name}=${peer}`,
    // A local development store: durability across power loss is not worth fsync's latency.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

export function startEtcd(p: Ports): number {
  return startDetached(
    'etcd',
    binaries.etcd,
    etcdArgs({ name: 'konfidence', dataDir: join(dataDir, 'etcd'), clientPort: p.etcdClient, peerPort: p.etcdPeer }),
  );
}

export async function etcdReady(p: Ports): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${p.etcdClient}/health`);
  return res.ok && ((await res.json()) as { health?: string }).health === 'true';
}

/**
 * Where kube-apiserver records who asked for what (one JSON line per request, with its user agent):
 * the benchmarks count the requests of our processes from it (bench/report.ts auditLog).
 */
export const auditLogPath = join(logDir, 'audit.log');

/**
 * The audit policy: every request of a client at Metadata level (verb, object, user agent, times),
 * written once it is answered; watches (long-running), discovery and health checks, and the
 * controller-manager's own requests are left out.
 */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: None
  verbs: [watch]
- level: None
  users: [system:kube-controller-manager, system:apiserver]
- level: None
  nonResourceURLs: ['/healthz*', '/livez*', '/readyz*', '/metrics', '/version', '/openapi/*', '/api', '/api/*', '/apis', '/apis/*']
- level: Metadata
`;

/**
 * A kube-apiserver on 127.0.0.1 that trusts the local CA and signs service-account tokens with its
 * key (certs.ts): the control plane's, or a landscape's (landscape.ts).
 */
export function apiserverArgs(o: { etcdClientPort: number; port: number; certDir: string; serviceRange: string }) {
  return [
    `--etcd-servers=http://127.0.0.1:${o.etcdClientPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    `--tls-cert-file=${pki.serverCert}`,
    `--tls-private-key-file=${pki.serverKey}`,
    `--client-ca-file=${pki.caCert}`,
    '--authorization-mode=RBAC',
    `--service-cluster-ip-range=${o.serviceRange}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${pki.saPub}`,
    `--service-account-signing-key-file=${pki.saKey}`,
    // No controller-manager runs to create service-account tokens.
    '--disable-admission-plugins=ServiceAccount',
    '--profiling=false',
    '--v=0',
  ];
}

export function startApiserver(p: Ports): number {
  mkdirSync(logDir, { recursive: true });
  const policy = join(stateDir, 'audit-policy.yaml');
  writeFileSync(policy, AUDIT_POLICY);
  return startDetached('kube-apiserver', binaries.kubeApiserver, [
    ...apiserverArgs({
      etcdClientPort: p.etcdClient,
      port: p.apiserver,
      certDir: join(stateDir, 'apiserver-certs'),
      serviceRange: SERVICE_CLUSTER_IP_RANGE,
    }),
    '--allow-privileged=true',
    `--audit-policy-file=${policy}`,
    `--audit-log-path=${auditLogPath}`,
    '--audit-log-format=json',
    // Written in batches off the requests' path, within a second.
    '--audit-log-mode=batch',
    '--audit-log-batch-max-wait=1s',
    '--audit-log-maxsize=200',
    '--audit-log-maxbackup=1',
  ]);
}

/** GET a path of the apiserver as admin; resolves to the HTTP status code. */
export function apiserverGet(p: Ports, path: string): Promise<number> {
  return adminGet(p.apiserver, path);
}

/** GET a path as admin of a kube-apiserver on 127.0.0.1 that trusts the local CA (scripts/env/certs.ts). */
export function adminGet(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: readFileSync(pki.caCert),
        cert: readFileSync(pki.adminCert),
        key: readFileSync(pki.adminKey),
        timeout: 5_000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

export async function apiserverReady(p: Ports): Promise<boolean> {
  return (await apiserverGet(p, '/readyz')) === 200 && (await apiserverGet(p, '/api/v1/namespaces/default')) === 200;
}

/**
 * kube-controller-manager with the garbage collector and the namespace controller only: owner
 * references cascade and namespaces finish deleting, as in a real cluster. No other controllers,
 * so nothing else acts on the tests' objects.
 */
/** A kube-controller-manager of what a local cluster needs: namespaces deleted, owned objects collected. */
export function controllerManagerArgs(o: { kubeconfig: string; port: number; certDir: string }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--controllers=garbagecollector,namespace',
    '--leader-elect=false',
    '--use-service-account-credentials=false',
    '--bind-address=127.0.0.1',
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    '--v=0',
  ];
}

export function startControllerManager(p: Ports, kubeconfig: string): number {
  return startDetached(
    'kube-controller-manager',
    binaries.kubeControllerManager,
    controllerManagerArgs({
      kubeconfig,
      port: p.controllerManager,
      certDir: join(stateDir, 'controller-manager-certs'),
    }),
  );
}

export function controllerManagerReady(p: Pick<Ports, 'controllerManager'>): Promise<boolean> {
  return new Promise((resolve, reject) => {
    // Its serving certificate is self-signed: only the answer matters here.
    const req = request(
      { host: '127.0.0.1', port: p.controllerManager, path: '/healthz', rejectUnauthorized: false, timeout: 5_000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const cliType: Record<string, string> = { KEYWORD: 'Keyword', TEXT: 'Text', INT: 'Int', BOOL: 'Bool' };

/**
 * The arguments of `temporal server start-dev` on 127.0.0.1 with the project's search attributes
 * and namespaces, its state in `dbFile` (the restart test runs a server of its own with them).
 */
export function devServerArgs(o: {
  port: number;
  httpPort: number;
  metricsPort: number;
  uiPort?: number;
  dbFile: string;
  namespaces?: readonly string[];
}): string[] {
  const attributes = searchAttributes.flatMap((a) => ['--search-attribute', `${a.name}=${cliType[a.type]}`]);
  return [
    'server',
    'start-dev',
    '--ip=127.0.0.1',
    `--port=${o.port}`,
    ...(o.uiPort ? [`--ui-port=${o.uiPort}`] : ['--headless']),
    `--http-port=${o.httpPort}`,
    `--metrics-port=${o.metricsPort}`,
    `--db-filename=${o.dbFile}`,
    // A local development store, as etcd's above: a write-ahead log and no fsync per commit keep
    // every history write off the disk's latency (each commit in the default journal mode syncs
    // twice; activations came out ~50 ms slower). A killed server loses nothing; a lost machine may.
    '--sqlite-pragma=journal_mode=wal',
    '--sqlite-pragma=synchronous=normal',
    ...(o.namespaces ?? TEMPORAL_NAMESPACES).map((n) => `--namespace=${n}`),
    ...attributes,
    '--log-level=warn',
  ];
}

export function startTemporal(p: Ports): number {
  return startDetached(
    'temporal',
    binaries.temporal,
    devServerArgs({
      port: p.temporal,
      uiPort: p.temporalUi,
      httpPort: p.temporalHttp,
      metricsPort: p.temporalMetrics,
      dbFile: join(dataDir, 'temporal.db'),
    }),
  );
}

// @temporalio/proto is CommonJS whose named exports Node's ESM loader cannot see.
const { IndexedValueType } = proto.temporal.api.enums.v1;
const indexedType: Record<string, proto.temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

/**
 * Registers the project's search attributes that the namespace lacks. `start-dev --search-attribute`
 * alone is not enough: on an existing database file it does not add attributes that are new.
 */
export async function ensureSearchAttributes(
  p: Ports,
  namespaces: readonly string[] = TEMPORAL_NAMESPACES,
): Promise<void> {
  const connection = await Connection.connect({ address: `127.0.0.1:${p.temporal}` });
  try {
    for (const namespace of namespaces) {
      await ensureNamespace(connection, namespace);
      // A namespace just registered reaches the server's other caches within seconds: NOT_FOUND
      // (code 5) until then.
      await pollUntil(
        async () => {
          try {
            // The time-skipping test server has no list call, so listing stays here, with the dev server.
            const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
            const missing = searchAttributes.filter((a) => !customAttributes || !(a.name in customAttributes));
            if (missing.length > 0) await addSearchAttributes(connection.operatorService, namespace, missing);
            return true;
          } catch (err) {
            if ((err as { code?: number }).code === 5) return false;
            throw err;
          }
        },
        30_000,
        `the search attributes of Temporal namespace ${namespace}`,
      );
    }
  } finally {
    await connection.close();
  }
}

/** A dev server started on a database of an older checkout lacks namespaces added since. */
async function ensureNamespace(connection: Connection, namespace: string): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (err) {
    if ((err as { code?: number }).code !== 5) throw err; // 5: NOT_FOUND
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: time.msToTs('1 day'),
    });
    await pollUntil(
      () =>
        connection.workflowService.describeNamespace({ namespace }).then(
          () => true,
          () => false,
        ),
      30_000,
      `namespace ${namespace} to be registered`,
    );
  }
}

/** Adds search attributes (default: all of the project's) to `namespace`: the dev server, the test server. */
export async function addSearchAttributes(
  operator: Connection['operatorService'],
  namespace: string,
  attributes: readonly SearchAttribute[] = searchAttributes,
): Promise<void> {
  await operator.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(attributes.map((a) => [a.name, indexedType[a.type]!])),
  });
}

export async function temporalReady(p: Ports): Promise<boolean> {
  const connection = await Connection.connect({ address: `127.0.0.1:${p.temporal}`, connectTimeout: 2_000 });
  try {
    const info = await connection.workflowService.getSystemInfo({});
    const ui = await fetch(`http://127.0.0.1:${p.temporalUi}/`);
    return Boolean(info.serverVersion) && ui.ok;
  } finally {
    await connection.close();
  }
}
