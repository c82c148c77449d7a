/**
 * The whole system in one process: core worker, one worker per built-in executor type, the
 * watcher and the Stage controller. `npm start` and the end-to-end tests run it this way; in a cluster each part runs as
 * its own process (worker/main.ts ROLE).
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker, type WorkerOptions } from '@temporalio/worker';
import { builtInExecutors } from '../executors/index.js';
import type { Executor } from '../executors/types.js';
import { userAgentOf, withUserAgent, type k8s } from '../k8s/client.js';
import { flushEvents } from '../k8s/events.js';
import type { Leadership } from '../k8s/leader-election.js';
import { SystemConfig } from '../k8s/system-config.js';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import { componentLogger } from '../telemetry/log.js';
import { CORE_TASK_QUEUE, executorTaskQueue } from '../shared/task-queues.js';
import { reportLandscapePollers } from '../telemetry/landscape-pollers.js';
import { createCoreWorker } from './core-worker.js';
import { createExecutorWorker } from './executor-worker.js';
import { keepLandscapeReports } from './landscape-reports.js';
import { ActivationController } from '../controllers/activation/controller.js';
import { StageController } from '../controllers/stage/controller.js';
import type { LogFn } from '../telemetry/log.js';

export interface SystemOptions {
  temporalAddress: string;
  temporalNamespace: string;
  kubeConfig: k8s.KubeConfig;
  uiUrl?: string;
  systemNamespace?: string;
  /** Watch these namespaces only (default all). */
  namespaces?: string[];
  /** Appended to every task queue name: tests run systems side by side on one Temporal server. */
  queueSuffix?: string;
  executors?: readonly Executor<any>[];
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** false: no core worker here (it runs in another process). */
  core?: boolean;
  /** false: no Stage controller here. */
  stageController?: boolean;
  /** false: the watcher runs in another process (the returned watcher is never started). */
  watcher?: boolean;
  /** Leader election of the watcher (docs/ha.md); absent: it always acts. */
  watcherLeadership?: Leadership;
  /** Leader election of the Stage controller; absent: it always acts. */
  stageControllerLeadership?: Leadership;
  /** How often the Stage controller passes over every namespace whatever changed (default 30 s). */
  stageControllerResyncMs?: number;
  /** How often the watcher checks unfinished activations' workflows for having closed. */
  watcherCheckIntervalMs?: number;
  /** At most this many Stages of one namespace activate at once (decisions/fair-share.ts); absent or 0: no limit. */
  stagesPerNamespace?: number;
  /** How often a waiting activation asks its Stage's lock again (tests shorten it). */
  lockAskAgainSeconds?: number;
  /** How long an activation waits for another holder's Stage Lease before it fails (default LEASE_WAIT_SECONDS, workflows/policies.ts). */
  leaseWaitSeconds?: number;
  /** How long a burst's newest waits for the rest of its burst at most, and the quiet that ends it sooner (decisions/supersede.ts; tests lengthen them). */
  burstSettleMs?: number;
  burstQuietMs?: number;
  /** The watcher's and Stage controller's log (default: the project's logger, telemetry/log.ts). */
  log?: LogFn;
  /** Where analyses that name no Prometheus address ask. */
  prometheusUrl?: string;
  /** How often each Landscape's workers are asked what its routes hold (default LANDSCAPE_REPORT_SECONDS). */
  landscapeReportSeconds?: number;
}

export interface RunningSystem {
  client: Client;
  coreTaskQueue: string;
  workers: Worker[];
  watcher: ActivationController;
  stageController?: StageController;
  stop(): Promise<void>;
}

export async function startSystem(o: SystemOptions): Promise<RunningSystem> {
  // Each role asks under its own name, as it does in a process of its own: an audit log tells the
  // roles apart from each other and from the caller.
  const as = (role: string) => withUserAgent(o.kubeConfig, userAgentOf(role));
  const suffix = o.queueSuffix ?? '';
  const coreTaskQueue = CORE_TASK_QUEUE + suffix;
  const connection = await Connection.connect({ address: o.temporalAddress });
  const client = new Client({ connection, namespace: o.temporalNamespace });
  const native = await NativeConnection.connect({ address: o.temporalAddress });
  const common = { connection: native, namespace: o.temporalNamespace };
  const systemConfig =
    o.core === false
      ? undefined
      : new SystemConfig(
          as('core'),
          o.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE,
          o.log ?? componentLogger('system-config').fn(),
        );
  // The core reports whether each Landscape's workers poll (konfidence_landscape_pollers).
  const stopReporting =
    systemConfig &&
    reportLandscapePollers({ client, namespace: o.temporalNamespace, systemConfig, queueSuffix: suffix });
  const workers = [
    ...(systemConfig === undefined
      ? []
      : [
          await createCoreWorker({
            ...common,
            systemConfig,
            kubeConfig: as('core'),
            client,
            taskQueue: coreTaskQueue,
            ...(o.systemNamespace ? { systemNamespace: o.systemNamespace } : {}),
            ...(o.workflowBundle ? { workflowBundle: o.workflowBundle } : {}),
            ...(o.prometheusUrl ? { prometheusUrl: o.prometheusUrl } : {}),
          }),
        ]),
    ...(await Promise.all(
      (o.executors ?? builtInExecutors).map((executor) =>
        createExecutorWorker({
          ...common,
          kubeConfig: as(`executor-${executor.type}`),
          executor,
          taskQueue: executorTaskQueue(executor.type) + suffix,
        }),
      ),
    )),
  ];
  const runs = workers.map((w) => w.run());
  // One report workflow per Landscape asks its workers what its routes hold (docs/landscapes.md).
  const stopLandscapeReports =
    systemConfig &&
    keepLandscapeReports({
      client,
      systemConfig,
      taskQueue: coreTaskQueue,
      queueSuffix: suffix,
      ...(o.landscapeReportSeconds ? { intervalSeconds: o.landscapeReportSeconds } : {}),
      log: o.log ?? componentLogger('landscape-reports').fn(),
    });
  const watcher = new ActivationController({
    kubeConfig: as('watcher'),
    client,
    taskQueue: coreTaskQueue,
    ...(o.namespaces ? { namespaces: o.namespaces } : {}),
    ...(o.uiUrl ? { uiUrl: o.uiUrl } : {}),
    ...(suffix ? { queueSuffix: suffix } : {}),
    ...(o.systemNamespace ? { systemNamespace: o.systemNamespace } : {}),
    ...(o.watcherCheckIntervalMs ? { checkIntervalMs: o.watcherCheckIntervalMs } : {}),
    ...(o.lockAskAgainSeconds ? { lockAskAgainSeconds: o.lockAskAgainSeconds } : {}),
    ...(o.leaseWaitSeconds ? { leaseWaitSeconds: o.leaseWaitSeconds } : {}),
    ...(o.stagesPerNamespace ? { stagesPerNamespace: o.stagesPerNamespace } : {}),
    ...(o.burstSettleMs !== undefined ? { burstSettleMs: o.burstSettleMs } : {}),
    ...(o.burstQuietMs !== undefined ? { burstQuietMs: o.burstQuietMs } : {}),
    ...(o.log ? { log: o.log } : {}),
    ...(o.watcherLeadership ? { leadership: o.watcherLeadership } : {}),
  });
  if (o.watcher !== false) await watcher.start();
  const stageController =
    o.stageController === false
      ? undefined
      : new StageController({
          kubeConfig: as('stage-controller'),
          ...(o.namespaces ? { namespaces: o.namespaces } : {}),
          ...(o.systemNamespace ? { systemNamespace: o.systemNamespace } : {}),
          ...(o.log ? { log: o.log } : {}),
          ...(o.stageControllerLeadership ? { leadership: o.stageControllerLeadership } : {}),
          ...(o.stageControllerResyncMs ? { resyncMs: o.stageControllerResyncMs } : {}),
        });
  await stageController?.start();
  return {
    client,
    coreTaskQueue,
    workers,
    watcher,
    ...(stageController ? { stageController } : {}),
    async stop() {
      // Both stop acting at once: no workflow started, no pass begun, once stop() is called.
      await Promise.all([stageController?.stop(), watcher.stop()]);
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(runs);
      stopReporting?.();
      stopLandscapeReports?.();
      await systemConfig?.stop();
      await flushEvents();
      await native.close();
      await connection.close();
    },
  };
}
