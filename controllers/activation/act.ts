/**
 * The activation controller's acts: starting an activation's workflow (or finding it running, or
 * closing the activation out when its run closed without finishing it), carrying out a pass's plan
 * (plan.ts), handing a deletion to a workflow. Status writes go through k8s/activation-store.ts;
 * every write is fenced right before it is sent (a deposed or resharded controller's throws
 * NotLeaderError). Every act is safe to repeat: a start finds a running workflow by its id.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { CoreDeps } from '../../activities/deps.js';
import { expectStageLock } from '../../stage-lock/activities.js';
import { isFinal } from '../../decisions/activation.js';
import { pinnedVersion } from '../../decisions/rollout.js';
import { supersededMessage, type Superseder } from '../../decisions/supersede.js';
import { closedWorkflow, closedWorkflowEnding } from '../../decisions/watcher.js';
import { holdActivation, skipBeforeStart } from '../../k8s/activation-store.js';
import { apiMessage, type k8s } from '../../k8s/client.js';
import type { CustomObject } from '../../k8s/custom-objects.js';
import { NotLeaderError, type LeaderGate } from '../../k8s/leader-election.js';
import { activationWorkflowId, cancelSignal, stageDeletedSignal, type StageDeletion } from '../../shared/activation.js';
import { releaseLockSignal, stageLockWorkflowId } from '../../stage-lock/contract.js';
import { refOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import { forEachLimited } from '../../shared/pool.js';
import type { LogFn } from '../../telemetry/log.js';
import { vectorActivation, type ActivationOptions } from '../../workflows/activation/workflow.js';
import { readCoreRollout } from '../../worker/core-rollout.js';
import { closeOutActivation } from './close-out.js';
import type { PassStates } from './pass-states.js';
import { InFlightWork } from './in-flight.js';
import { latestRun } from './observe.js';
import type { PassDecision } from './decide-pass.js';

/** How many of a burst's superseded activations are ended Skipped at a time. */
const SKIPS_AT_ONCE = 4;

export interface ActionOptions {
  client: Client;
  taskQueue: string;
  /** Unfenced: reads only (the canary rollout). */
  kubeConfig: k8s.KubeConfig;
  systemNamespace?: string;
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

/** How long one read of the core rollout serves the starts that follow it. */
const ROLLOUT_REUSE_MS = 1_000;

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

  /** Carries out a pass's plan: expectations and skips in the background, then the starts, then the holds. */
  async pass(namespace: string, plan: PassDecision): Promise<void> {
    const attempt = (activation: CachedActivation, what: string, work: () => Promise<unknown>) =>
      Promise.resolve()
        .then(work)
        .catch(
          (err: unknown) =>
            err instanceof NotLeaderError ||
            this.options.log(
              `VectorActivation ${namespace}/${activation.metadata!.name}: ${what}: ${apiMessage(err)}`,
              { level: 'warn', ...this.about(activation) },
            ),
        );
    for (const superseder of plan.expectations) void this.work.run(namespace, () => this.expect(namespace, superseder));
    const start = (activation: CachedActivation) => attempt(activation, 'start', () => this.ensure(activation));
    // A loser that could not be ended starts, and the Stage's lock supersedes it. The pass does not
    // wait for the skips: a burst's newest held for the rest of its burst starts when its time comes.
    if (plan.skips.length > 0)
      void this.work.run(namespace, () =>
        this.skip(namespace, plan.skips).then((unended) => Promise.all(unended.map(start))),
      );
    await Promise.all(plan.starts.map(start));
    for (const activation of plan.holds) {
      await attempt(activation, 'marking it held', () => {
        this.options.gate.fence(`holding ${namespace}/${activation.metadata!.name}`, namespace);
        return holdActivation(this.options.deps, refOf(activation), plan.heldMessage);
      });
    }
  }

  /**
   * The core rollout: a canary namespace's activation starts pinned to the canary build
   * (docs/scale.md). One read serves the starts of the second it was made in (a pass starts its
   * activations together), so a canary set a moment ago applies to the next activations.
   */
  private rollout(): ReturnType<typeof readCoreRollout> | Promise<undefined> {
    if (!this.options.systemNamespace) return Promise.resolve(undefined);
    const now = performance.now();
    if (!this.rolloutRead || now - this.rolloutRead.at > ROLLOUT_REUSE_MS) {
      const read = readCoreRollout(this.options.kubeConfig, this.options.systemNamespace);
      this.rolloutRead = { at: now, read };
      read.catch(() => (this.rolloutRead = undefined)); // a failed read is not reused
    }
    return this.rolloutRead.read;
  }
  private rolloutRead?: { at: number; read: ReturnType<typeof readCoreRollout> };

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

  /**
   * Tells the Stage's lock that a burst's newest is on its way: an older activation started before
   * the burst was seen whole then waits at the lock to be superseded by it, instead of taking the
   * free Stage and running first (bench/burst). Without it (the signal failed) that one runs first.
   */
  private async expect(namespace: string, superseder: Superseder): Promise<void> {
    const activation = `${namespace}/${superseder.name}`;
    try {
      this.options.gate.fence(`expecting ${activation} at its Stage's lock`, namespace);
      await expectStageLock(this.options.client, this.options.taskQueue, namespace, superseder.stage, {
        requester: activationWorkflowId({ namespace, name: superseder.name, uid: superseder.uid }),
        revision: superseder.revision,
        activation,
      });
    } catch (err) {
      if (err instanceof NotLeaderError) this.options.passStates.unexpect(namespace, superseder.uid);
      else
        this.options.log(
          `telling the lock of ${namespace}/${superseder.stage} to expect ${superseder.name}: ${apiMessage(err)}`,
          { level: 'warn', namespace, activation: superseder.name, stage: superseder.stage },
        );
    }
  }

  /** Ends a burst's losers Skipped, a few at a time; returns those it did not end (they start). */
  private async skip(namespace: string, skips: PassDecision['skips']): Promise<CachedActivation[]> {
    const unended: CachedActivation[] = [];
    // A few at a time: all of a burst's skips at once (a read, a status write and an Event each)
    // would queue the Stage's running activation behind them at the apiserver (bench/burst).
    await forEachLimited(skips, SKIPS_AT_ONCE, async ({ activation: cachedActivation, by }) => {
      const ref = refOf(cachedActivation);
      try {
        // A previous leader may have started it, and its workflow not written a status yet.
        if ((await latestRun(this.options.client, workflowIdOf(cachedActivation))) === undefined) {
          this.options.gate.fence(`superseding ${namespace}/${ref.name}`, namespace);
          // Ended: it stays among those being skipped until the watch brings the write back (a
          // stale event may come first), so that no pass starts it meanwhile.
          if (
            await skipBeforeStart(
              this.options.deps,
              ref,
              supersededMessage(namespace, by),
              cachedActivation as CustomObject,
            )
          )
            return;
        }
      } catch (err) {
        if (!(err instanceof NotLeaderError))
          this.options.log(`superseding ${namespace}/${ref.name}: ${apiMessage(err)}; starting it`, {
            level: 'warn',
            ...this.about(cachedActivation),
          });
      }
      this.options.passStates.skipping(namespace, ref.uid, false);
      unended.push(cachedActivation);
    });
    return unended;
  }
}
