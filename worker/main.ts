/**
 * Entry point of the processes that run in a cluster, one role each:
 *   tsx worker/main.ts core            workflows + Kubernetes activities (task queue konfidence-core)
 *   tsx worker/main.ts watcher         the activation controller (controllers/activation/): starts workflows
 *   tsx worker/main.ts executor TYPE   one executor type (gateway-api, istio)
 *   tsx worker/main.ts stage-controller  Stages, StageVersions and usages (ADR-0013)
 *   tsx worker/main.ts all             everything in one process
 * Configuration: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_UI_URL, KUBECONFIG (or the
 * in-cluster service account), KONFIDENCE_SYSTEM_NAMESPACE, KONFIDENCE_WATCH_NAMESPACES (comma list),
 * KONFIDENCE_QUEUE_SUFFIX, KONFIDENCE_BUILD_ID (core: Worker Versioning, docs/scale.md); high availability (docs/ha.md): KONFIDENCE_LEADER_ELECTION, KONFIDENCE_IDENTITY,
 * KONFIDENCE_LEASE_DURATION_MS, KONFIDENCE_RENEW_DEADLINE_MS, KONFIDENCE_RETRY_PERIOD_MS,
 * KONFIDENCE_HEALTH_PORT, KONFIDENCE_LOG_WRITES; shards (docs/scale.md): KONFIDENCE_SHARD.
 * Telemetry (docs/observability.md): KONFIDENCE_LOG_LEVEL (trace, debug, info, warn, error; default
 * info), KONFIDENCE_LOG_FORMAT (json, text; default json unless stdout is a terminal),
 * KONFIDENCE_SDK_METRICS_ADDRESS (the Temporal SDK's exporter; default a free loopback port);
 * Prometheus metrics on the health port's /metrics.
 */
import { hostname } from 'node:os';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { k8s, loadKubeConfig, userAgentOf, withUserAgent } from '../k8s/client.js';
import { fenceWrites, LEASE_NAMES, leaseName, LeaderElector, type Leadership } from '../k8s/leader-election.js';
import { ShardMembership, type ShardedComponent } from './shards.js';
import { CORE_TASK_QUEUE, executorTaskQueue } from '../shared/task-queues.js';
import { loadConfig } from './config.js';
import { Shutdown } from './shutdown.js';
import { StageController } from '../controllers/stage/controller.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from './health.js';
import { endpointFromEnv, startPublisher, versionFromEnv, type Publisher } from './publisher.js';
import { componentLogger, logger } from '../telemetry/log.js';
import { flushEvents } from '../k8s/events.js';
import type { SystemConfig } from '../k8s/system-config.js';
import { enableProcessMetrics, metricsContentType, metricsText } from '../telemetry/metrics.js';

const [role = 'all', type] = process.argv.slice(2);
const config = loadConfig();
const log = componentLogger('main', { role });
// First of all: a signal from here on is handled (worker/shutdown.ts).
const shutdown = new Shutdown({ graceMs: config.KONFIDENCE_SHUTDOWN_GRACE_MS, log: (m) => log.warn(m) });
/**
 * Only the roles that run Workers load the SDK's worker side (its native runtime, the bundler): the
 * watcher needs a client alone and the Stage controller no Temporal at all, and each would carry
 * tens of MiB it never uses (the goal is 200 MB per process at scale).
 */
const runsWorkers = role === 'core' || role === 'executor' || role === 'all';
const usesTemporal = role !== 'stage-controller';
// Loaded only where used: the SDK's client (gRPC, the protobuf bundle) is some 30 MiB of resident
// memory the Stage controller would carry for nothing (bench/scale).
const temporal = usesTemporal ? await import('@temporalio/client') : undefined;
// The SDK's runtime shuts every Worker down on SIGINT/SIGTERM: polling stops, in-flight activities
// are cancelled (a heartbeating one fails its attempt and Temporal retries it on another replica),
// sticky workflow tasks go back to the shared queue; worker.run() resolves when that is done.
const sdkTelemetry = runsWorkers ? await import('../telemetry/temporal.js') : undefined;
const sdkMetricsUrl = (await sdkTelemetry?.installTemporalRuntime(logger(), config.KONFIDENCE_SDK_METRICS_ADDRESS))
  ?.sdkMetricsUrl;
enableProcessMetrics();
const identity = config.KONFIDENCE_IDENTITY ?? `${hostname()}-${process.pid}`;
// A shard elects its leader always: its Lease is how the other shards know it is alive (docs/scale.md).
const shard = config.KONFIDENCE_SHARD;
const electing = config.KONFIDENCE_LEADER_ELECTION || shard !== undefined;
// A plain line, not a record: people and tests grep the write trace by its "[write] IDENTITY " prefix.
const logWrite = config.KONFIDENCE_LOG_WRITES
  ? (what: string) => logger().line(`[write] ${identity} ${what}`)
  : undefined;
/** For the elector and readiness: never fenced, never in the write log. */
const baseKubeConfig = withUserAgent(
  loadKubeConfig(config.KUBECONFIG),
  userAgentOf(role === 'executor' ? `executor-${type ?? ''}` : role),
);
const kubeConfig = logWrite
  ? fenceWrites(baseKubeConfig, { onWrite: (method, path) => logWrite(`k8s ${method} ${path}`) })
  : baseKubeConfig;
const namespaces = config.KONFIDENCE_WATCH_NAMESPACES?.split(',')
  .map((n) => n.trim())
  .filter(Boolean);
const connection = temporal ? await temporal.Connection.connect({ address: config.TEMPORAL_ADDRESS }) : undefined;
const client =
  connection &&
  new temporal!.Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    // Electing: the Temporal history names the replica that started or signalled a workflow.
    ...(electing || config.KONFIDENCE_IDENTITY ? { identity } : {}),
    ...(logWrite ? { interceptors: { workflow: [temporalWriteLog(logWrite)] } } : {}),
  });
const native: NativeConnection | undefined = runsWorkers
  ? await (await import('@temporalio/worker')).NativeConnection.connect({ address: config.TEMPORAL_ADDRESS })
  : undefined;
const common = { connection: native!, namespace: config.TEMPORAL_NAMESPACE, kubeConfig };
const suffix = config.KONFIDENCE_QUEUE_SUFFIX;

function temporalWriteLog(logLine: (what: string) => void): WorkflowClientInterceptor {
  return {
    start: (input, next) => (logLine(`temporal start ${input.options.workflowId}`), next(input)),
    startWithDetails: (input, next) => (logLine(`temporal start ${input.options.workflowId}`), next(input)),
    signal: (input, next) => (
      logLine(`temporal signal ${input.signalName} ${input.workflowExecution.workflowId}`),
      next(input)
    ),
    signalWithStart: (input, next) => (
      logLine(`temporal signalWithStart ${input.signalName} ${input.options.workflowId}`),
      next(input)
    ),
    startUpdate: (input, next) => (
      logLine(`temporal update ${input.updateName} ${input.workflowExecution.workflowId}`),
      next(input)
    ),
    terminate: (input, next) => (logLine(`temporal terminate ${input.workflowExecution.workflowId}`), next(input)),
    cancel: (input, next) => (logLine(`temporal cancel ${input.workflowExecution.workflowId}`), next(input)),
  };
}

/**
 * One elector per elected role, on its Lease in the system namespace, and beside it the publisher
 * of status.activeController (docs/ha-publishing.md); neither in standalone mode, so a plain
 * install leaves the field absent.
 */
const electors: LeaderElector[] = [];
const publishers: Publisher[] = [];
function electorFor(elected: keyof typeof LEASE_NAMES): LeaderElector | undefined {
  if (!electing) return undefined;
  const elector = new LeaderElector({
    kubeConfig: baseKubeConfig,
    namespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    name: leaseName(elected, shard),
    identity,
    leaseDurationMs: config.KONFIDENCE_LEASE_DURATION_MS,
    renewDeadlineMs: config.KONFIDENCE_RENEW_DEADLINE_MS,
    retryPeriodMs: config.KONFIDENCE_RETRY_PERIOD_MS,
    log: componentLogger('leader-election', { role: elected }).fn(),
  });
  electors.push(elector);
  publishers.push(
    startPublisher({
      kubeConfig: baseKubeConfig,
      systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
      role: elected,
      ...(shard ? { shard } : {}),
      leadership: elector,
      endpoint: endpointFromEnv(),
      version: versionFromEnv(),
      log: componentLogger('publisher', { role: elected }).fn(),
    }),
  );
  return elector;
}
const leadershipOf = (e: LeaderElector | undefined): { leadership?: Leadership } => (e ? { leadership: e } : {});

/** Sharded (KONFIDENCE_SHARD): the shell that gives the component its shard's namespaces (worker/shards.ts). */
const memberships: ShardMembership[] = [];
async function joinShard(
  elected: keyof typeof LEASE_NAMES,
  component: ShardedComponent,
  elector: LeaderElector | undefined,
): Promise<void> {
  if (!shard || !elector) return;
  const membership = new ShardMembership({
    kubeConfig: baseKubeConfig,
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    role: elected,
    shard,
    leadership: elector,
    leaseDurationMs: config.KONFIDENCE_LEASE_DURATION_MS,
    intervalMs: Math.min(1_000, config.KONFIDENCE_RETRY_PERIOD_MS),
    component,
    log: componentLogger('shard', { role: elected, shard }).fn(),
  });
  memberships.push(membership);
  checks.push({
    name: `shard-${elected}`,
    check: () => assertSynced(membership.isSynced(), 'the shard (namespaces, ShardingConfig)'),
  });
  await membership.start();
}

// Readiness: the servers this role talks to answer, and its caches synced (a standby is ready).
const checks: ReadinessCheck[] = [
  ...(connection ? [{ name: 'temporal', check: () => connection.workflowService.getSystemInfo({}) }] : []),
  { name: 'apiserver', check: () => baseKubeConfig.makeApiClient(k8s.VersionApi).getCode() },
];
let health: HealthServer | undefined;
try {
  health = await startHealthServer({
    port: config.KONFIDENCE_HEALTH_PORT,
    checks,
    // The project's metrics, then the Temporal SDK's: one scrape target per process.
    metrics: async () => ({
      contentType: metricsContentType,
      text: (
        await Promise.all([metricsText(), sdkMetricsUrl ? sdkTelemetry!.fetchSdkMetrics(sdkMetricsUrl) : ''])
      ).join('\n'),
    }),
  });
} catch (err) {
  // Not fatal: the role works without probes (a second process on one host, say); the probes then fail loudly.
  componentLogger('health').error(
    `could not listen on port ${config.KONFIDENCE_HEALTH_PORT}: ${(err as Error).message}`,
  );
}
/** Stops the components (no new work), then releases the Leases so a standby takes over at once. */
async function stopElectors(): Promise<void> {
  await flushEvents(); // while still leading: an elected role's writes are fenced
  await Promise.all(publishers.map((p) => p.stop()));
  await Promise.all(electors.map((e) => e.stop()));
}

let worker: Worker | undefined;
/** The core's watched configuration, stopped after its worker. */
let systemConfig: SystemConfig | undefined;
// Not ready while the role's components are still being made (bundling takes seconds): the checks
// below are added as they are made, and a probe in between must not find the role ready.
let started = false;
/** The core worker's workflows: a bundle made before, or (unset) bundled from the sources now. */
const workflowBundle = config.KONFIDENCE_WORKFLOW_BUNDLE
  ? { workflowBundle: { codePath: config.KONFIDENCE_WORKFLOW_BUNDLE } }
  : {};
checks.push({ name: 'started', check: () => assertSynced(started, 'the components of this role') });
if (role === 'core') {
  const [{ createCoreWorker }, { SystemConfig }] = await Promise.all([
    import('./core-worker.js'),
    import('../k8s/system-config.js'),
  ]);
  systemConfig = new SystemConfig(
    kubeConfig,
    config.KONFIDENCE_SYSTEM_NAMESPACE,
    componentLogger('system-config', { role }).fn(),
  );
  // The core reports whether each Landscape's workers poll (konfidence_landscape_pollers).
  const { reportLandscapePollers } = await import('../telemetry/landscape-pollers.js');
  reportLandscapePollers({ client: client!, namespace: common.namespace, systemConfig, queueSuffix: suffix });
  worker = await createCoreWorker({
    systemConfig,
    ...common,
    client: client!,
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    taskQueue: CORE_TASK_QUEUE + suffix,
    queueSuffix: suffix,
    ...(config.KONFIDENCE_BUILD_ID ? { buildId: config.KONFIDENCE_BUILD_ID } : {}),
    ...(config.KONFIDENCE_PROMETHEUS_URL ? { prometheusUrl: config.KONFIDENCE_PROMETHEUS_URL } : {}),
    ...(config.KONFIDENCE_MAX_CACHED_WORKFLOWS ? { maxCachedWorkflows: config.KONFIDENCE_MAX_CACHED_WORKFLOWS } : {}),
    ...workflowBundle,
  });
  // One report workflow per Landscape asks its workers what its routes hold (docs/landscapes.md).
  const { keepLandscapeReports } = await import('./landscape-reports.js');
  keepLandscapeReports({
    client: client!,
    systemConfig,
    taskQueue: CORE_TASK_QUEUE + suffix,
    queueSuffix: suffix,
    intervalSeconds: config.KONFIDENCE_LANDSCAPE_REPORT_SECONDS,
    log: componentLogger('landscape-reports', { role }).fn(),
  });
} else if (role === 'executor') {
  const [{ executorFor }, { createExecutorWorker }] = await Promise.all([
    import('../executors/index.js'),
    import('./executor-worker.js'),
  ]);
  const executor = type ? executorFor(type) : undefined;
  if (!executor) throw new Error(`usage: worker/main.ts executor TYPE; unknown type ${type ?? '(none)'}`);
  const landscape = config.KONFIDENCE_LANDSCAPE;
  worker = await createExecutorWorker({
    ...common,
    executor,
    ...(landscape ? { landscape } : {}),
    taskQueue: executorTaskQueue(executor.type, landscape) + suffix,
  });
} else if (role === 'watcher') {
  const elector = electorFor('watcher');
  const { ActivationController } = await import('../controllers/activation/controller.js');
  const watcher = new ActivationController({
    kubeConfig,
    client: client!,
    taskQueue: CORE_TASK_QUEUE + suffix,
    ...(suffix ? { queueSuffix: suffix } : {}),
    ...(namespaces ? { namespaces } : {}),
    ...(config.TEMPORAL_UI_URL ? { uiUrl: config.TEMPORAL_UI_URL } : {}),
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    ...(shard ? { sharded: true } : {}),
    ...(config.KONFIDENCE_STAGES_PER_NAMESPACE ? { stagesPerNamespace: config.KONFIDENCE_STAGES_PER_NAMESPACE } : {}),
    ...leadershipOf(elector),
  });
  checks.push({ name: 'watcher', check: () => assertSynced(watcher.isSynced(), 'the VectorActivation informers') });
  await watcher.start();
  await joinShard('watcher', watcher, elector);
  started = true;
  shutdown.started();
  electors.forEach((e) => e.start()); // only once the caches are warm
  await shutdown.signalled;
  // The watcher stops starting workflows at once, beside its shard memberships.
  await Promise.all([watcher.stop(), ...memberships.map((m) => m.stop())]);
  await stopElectors();
} else if (role === 'stage-controller') {
  const elector = electorFor('stage-controller');
  const controller = new StageController({
    kubeConfig,
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    ...(namespaces ? { namespaces } : {}),
    ...(shard ? { sharded: true, shard } : {}),
    ...(config.KONFIDENCE_STAGES_PER_NAMESPACE ? { stagesPerNamespace: config.KONFIDENCE_STAGES_PER_NAMESPACE } : {}),
    ...leadershipOf(elector),
  });
  checks.push({
    name: 'stageController',
    check: () => assertSynced(controller.isSynced(), 'the Stage controller watches'),
  });
  await controller.start();
  await joinShard('stage-controller', controller, elector);
  started = true;
  shutdown.started();
  electors.forEach((e) => e.start());
  await shutdown.signalled;
  await Promise.all([controller.stop(), ...memberships.map((m) => m.stop())]);
  await stopElectors();
} else if (role === 'all') {
  if (shard)
    throw new Error(
      'KONFIDENCE_SHARD: run the watcher and the stage-controller of a shard as their own processes (worker/main.ts watcher, stage-controller), not as part of "all"',
    );
  const { startSystem } = await import('./system.js');
  const system = await startSystem({
    temporalAddress: config.TEMPORAL_ADDRESS,
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    kubeConfig,
    systemNamespace: config.KONFIDENCE_SYSTEM_NAMESPACE,
    ...(suffix ? { queueSuffix: suffix } : {}),
    ...(namespaces ? { namespaces } : {}),
    ...(config.TEMPORAL_UI_URL ? { uiUrl: config.TEMPORAL_UI_URL } : {}),
    ...(config.KONFIDENCE_STAGES_PER_NAMESPACE ? { stagesPerNamespace: config.KONFIDENCE_STAGES_PER_NAMESPACE } : {}),
    ...(config.KONFIDENCE_PROMETHEUS_URL ? { prometheusUrl: config.KONFIDENCE_PROMETHEUS_URL } : {}),
    ...workflowBundle,
    ...(electing
      ? { watcherLeadership: electorFor('watcher')!, stageControllerLeadership: electorFor('stage-controller')! }
      : {}),
  });
  checks.push(
    { name: 'watcher', check: () => assertSynced(system.watcher.isSynced(), 'the VectorActivation informers') },
    {
      name: 'stageController',
      check: () => assertSynced(system.stageController?.isSynced() ?? true, 'the Stage controller watches'),
    },
    {
      name: 'workers',
      check: () =>
        assertSynced(
          system.workers.every((w) => w.getState() === 'RUNNING'),
          'the workers',
        ),
    },
  );
  started = true;
  shutdown.started();
  electors.forEach((e) => e.start());
  await shutdown.signalled;
  await system.stop();
  await stopElectors();
} else {
  throw new Error(`unknown role ${role}: core, watcher, executor TYPE, stage-controller or all`);
}
if (worker) {
  const polling = worker;
  checks.push({ name: 'worker', check: () => assertSynced(polling.getState() === 'RUNNING', 'the worker (polling)') });
  started = true;
  log.info(
    `${role}${type ? ` ${type}` : ''} worker polling ${config.TEMPORAL_ADDRESS} (${config.TEMPORAL_NAMESPACE})`,
    { taskQueue: polling.options.taskQueue },
  );
  const running = worker.run(); // resolves once shut down and its in-flight tasks are done
  shutdown.started();
  void shutdown.signalled.then(() => {
    // The SDK's runtime may have begun the same on the signal.
    if (polling.getState() === 'RUNNING') polling.shutdown();
  });
  await running;
}
await systemConfig?.stop();
await flushEvents(); // the Events of the last transitions are written in the background
await health?.close();
await native?.close();
await connection?.close();

function assertSynced(ok: boolean, what: string): void {
  if (!ok) throw new Error(`${what} not started or synced yet`);
}
