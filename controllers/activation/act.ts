/**
 * The activation controller's acts: starting an activation's workflow (or finding it running, or
 * closing the activation out when its run closed without finishing it), carrying out a pass's decision
 * (decide-pass.ts), handing a deletion to a workflow. Status writes go through k8s/activation-store.ts;
 * every write is fenced right before it is sent (a deposed or resharded controller's throws
 * NotLeaderError). Every act is safe to repeat: a start finds a running workflow by its id.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { CoreDeps } from '../../activities/deps.js';
import { isFinal } from '../../decisions/activation.js';
import { pinnedVersion } from '../../decisions/rollout.js';
import { closedWorkflow, closedWorkflowEnding } from '../../decisions/watcher.js';
import type { LeaderGate } from '../../k8s/leader-election.js';
import { activationWorkflowId, cancelSignal, stageDeletedSignal, type StageDeletion } from '../../shared/activation.js';
import { releaseLockSignal, stageLockWorkflowId } from '../../stage-lock/contract.js';
import { refOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import type { LogFn } from '../../telemetry/log.js';
import { vectorActivation, type ActivationOptions } from '../../workflows/activation/workflow.js';
import type { CoreRolloutWatch } from '../../worker/core-rollout.js';
import type { CoreRollout } from '../../api/core-rollout.js';
import { closeOutActivation } from './close-out.js';
import type { PassStates } from './pass-states.js';
import { InFlightWork } from './in-flight.js';
import { latestRun } from './observe.js';

export interface ActionOptions {
  client: Client;
  taskQueue: string;
  systemNamespace?: string;
  /** The core rollout as watched in the system namespace; absent: no canary. */
  rolloutWatch?: CoreRolloutWatch;
  uiUrl?: string;
  queueSuffix?: string;
  lockAskAgainSeconds?: number;
  leaseWaitSeconds?: number;
  gate: LeaderGate;
  /** Through the gate's KubeConfig: every write fenced. */
  deps: CoreDeps;
  passStates: PassStates;
  log: LogFn;
  /** Asks for the namespace's pass (controller.ts): the only path that starts a workflow. */
  pass: (namespace: string) => void;
}

/** What a deleted activation's workflow is told. */
const DELETED = { token: 'deleted', reason: 'the VectorActivation was deleted', deleted: true };

export class ActivationActions {
  readonly work = new InFlightWork();

  constructor(readonly options: ActionOptions) {}

  /** Fields that say which activation a record is about. */
  about(cachedActivation: CachedActivation) {
    const ref = refOf(cachedActivation);
    return {
      namespace: ref.namespace,
      activation: ref.name,
      ...(cachedActivation.spec?.stage ? { stage: cachedActivation.spec.stage } : {}),
      workflowId: activationWorkflowId(ref),
    };
  }

  /**
   * The core rollout: a canary namespace's activation starts pinned to the canary build
   * (docs/scale.md), as the watch of the system namespace's ConfigMaps has it.
   */
  private rollout(): Promise<CoreRollout | undefined> {
    return this.options.rolloutWatch?.current() ?? Promise.resolve(undefined);
  }

  async startWorkflow(
    cachedActivation: CachedActivation,
    extra: Partial<ActivationOptions>,
    reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE',
    memo?: Record<string, unknown>,
  ) {
    const ref = refOf(cachedActivation);
    const pinnedTo = pinnedVersion(await this.rollout(), ref.namespace);
    this.options.gate.fence(`starting the workflow of ${ref.namespace}/${ref.name}`, ref.namespace);
    return this.options.client.workflow.start(vectorActivation, {
      ...(pinnedTo ? { versioningOverride: { pinnedTo } } : {}),
      workflowId: activationWorkflowId(ref),
      taskQueue: this.options.taskQueue,
      args: [
        ref,
        {
          ...(this.options.uiUrl ? { uiUrl: this.options.uiUrl } : {}),
          ...(this.options.queueSuffix ? { queueSuffix: this.options.queueSuffix } : {}),
          ...(this.options.lockAskAgainSeconds ? { lockAskAgainSeconds: this.options.lockAskAgainSeconds } : {}),
          ...(this.options.leaseWaitSeconds ? { leaseWaitSeconds: this.options.leaseWaitSeconds } : {}),
          ...extra,
        },
      ],
      // A repeated event, a resync or a restarted controller finds the running workflow.
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: reuse,
      staticSummary: `Activate ${cachedActivation.spec?.stageVersion} on Stage ${ref.namespace}/${cachedActivation.spec?.stage}`,
      staticDetails: `VectorActivation ${ref.namespace}/${ref.name} (uid ${ref.uid})`,
      ...(memo ? { memo } : {}),
    });
  }

  /** Starts the workflow of an unfinished object, or finds it running, or closes the object out. */
  async ensure(cachedActivation: CachedActivation): Promise<void> {
    const ns = cachedActivation.metadata!.namespace!;
    const workflowId = workflowIdOf(cachedActivation);
    if (this.options.passStates.of(ns).running.has(workflowId)) return;
    try {
      await this.startWorkflow(cachedActivation, {}, 'REJECT_DUPLICATE');
      this.options.passStates.running(ns, workflowId, true);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await this.checkClosed(cachedActivation); // a closed run exists, yet the object is unfinished
    }
  }

  /** Looks at the workflow of an unfinished object: gone, it is started again; closed, the object is closed out. */
  async checkClosed(cachedActivation: CachedActivation): Promise<void> {
    const ns = cachedActivation.metadata!.namespace!;
    const workflowId = workflowIdOf(cachedActivation);
    const run = await latestRun(this.options.client, workflowId);
    if (run === undefined) {
      this.options.passStates.running(ns, workflowId, false);
      return this.ensure(cachedActivation); // gone (retention, deleted): an unfinished object gets a workflow
    }
    if (run.status === 'RUNNING' || run.status === 'CONTINUED_AS_NEW') {
      this.options.passStates.running(ns, workflowId, true);
      return;
    }
    this.options.passStates.running(ns, workflowId, false);
    return this.closeOut(cachedActivation, run);
  }

  /**
   * Deleted with the close-out finalizer: a running workflow is told (it stops, reverts under
   * Revert, and takes the finalizer away as it ends); one that closed is closed out.
   */
  async deleting(cachedActivation: CachedActivation): Promise<void> {
    const ref = refOf(cachedActivation);
    const workflowId = workflowIdOf(cachedActivation);
    const run = await latestRun(this.options.client, workflowId);
    if (run?.status === 'RUNNING') {
      this.options.gate.fence(`handing the deletion of ${ref.namespace}/${ref.name} to its workflow`, ref.namespace);
      await this.options.client.workflow.getHandle(workflowId).signal(cancelSignal, DELETED);
      return;
    }
    return this.closeOut(cachedActivation, run);
  }

  /**
   * Tells an activation's workflow that its Stage is deleted. True once it is told, or has nothing to
   * be told (closed, or never started: its own read of the Stage finds it); false when Temporal
   * could not be asked (the caller tries again).
   */
  signalStageDeleted(workflowId: string, notice: StageDeletion): Promise<boolean> {
    return this.work.run(notice.namespace, () =>
      this.options.client.workflow
        .getHandle(workflowId)
        .signal(stageDeletedSignal, notice)
        .then(
          () => true,
          (err: unknown) => err instanceof WorkflowNotFoundError,
        ),
    );
  }

  /** Tells a deleted activation's workflow; one that closed or is gone ignores it. */
  signalDeleted(workflowId: string): Promise<unknown> {
    return this.options.client.workflow
      .getHandle(workflowId)
      .signal(cancelSignal, DELETED)
      .catch(() => undefined);
  }

  /**
   * An activation whose run closed without finishing it (or has none): a close-out run of its
   * workflow puts back what it changed (ActivationRun.closeOut). Finished already, or its
   * close-out run closed too: the controller lets everything go itself, reverting nothing.
   */
  async closeOut(
    cachedActivation: CachedActivation,
    run: { status: string; closeOut: boolean } | undefined,
  ): Promise<void> {
    const ref = refOf(cachedActivation);
    const workflowId = workflowIdOf(cachedActivation);
    if (!isFinal(cachedActivation.status?.phase) && !run?.closeOut) {
      const why = closedWorkflow(run?.status ?? 'NOT_FOUND', workflowId);
      await this.startWorkflow(cachedActivation, { resume: 'close-out', closeOut: why }, 'ALLOW_DUPLICATE', {
        closeOut: true,
      });
      this.options.passStates.running(ref.namespace, workflowId, true);
      this.options.log(
        `VectorActivation ${ref.namespace}/${ref.name}: ${why.message}; its close-out run started`,
        this.about(cachedActivation),
      );
      return;
    }
    this.options.gate.fence(`closing out ${ref.namespace}/${ref.name}`, ref.namespace);
    if (
      await closeOutActivation(this.options.deps, ref, closedWorkflowEnding(run?.status ?? 'NOT_FOUND', workflowId))
    ) {
      this.options.log(
        `VectorActivation ${ref.namespace}/${ref.name}: workflow ${run?.status.toLowerCase() ?? 'gone'}; closed out`,
        this.about(cachedActivation),
      );
      // Free the Stage now rather than at the lock's next holder check.
      this.options.gate.fence(
        `releasing the lock of Stage ${ref.namespace}/${cachedActivation.spec!.stage}`,
        ref.namespace,
      );
      await this.options.client.workflow
        .getHandle(stageLockWorkflowId(ref.namespace, cachedActivation.spec!.stage!))
        .signal(releaseLockSignal, { requester: workflowId })
        .catch(() => undefined);
    }
  }
}
