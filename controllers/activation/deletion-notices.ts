/**
 * Deletions told to the workflows they end: a VectorActivation deleted (its workflow cancels and
 * closes), and a Stage deleted, or being deleted: the workflows of its unfinished activations are
 * told at once (stageDeletedSignal), which then stop and end StageDeleted. What to tell is decided per event
 * (decide-object.ts decideStageEvent); a standby, or a shard that does not serve the namespace yet,
 * keeps the notices for whoever serves it next (handOver).
 */
import { decideDeleted, decideStageEvent, handOver, type CachedStage } from './decide-object.js';
import type { StageDeletion } from '../../shared/activation.js';
import { workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import type { LogFn } from '../../telemetry/log.js';
import type { NamespacedInformers } from '../informers.js';
import type { ActivationActions } from './act.js';

/** How often a Stage's deletion is signalled to a workflow Temporal could not be asked for, a second more each time. */
const STAGE_NOTICE_ATTEMPTS = 5;
/** Where the informers' kinds list Stages (the controller's `kinds`). */
export const STAGE_KIND = 1;

export interface StageDeletionParts {
  informers: NamespacedInformers;
  actions: ActivationActions;
  /** The cached activations: whose workflows a deleted Stage's notice goes to. */
  activations: () => Iterable<CachedActivation>;
  stopped: () => boolean;
  log: LogFn;
}

export class DeletionNotices {
  /** VectorActivation deletions seen while not acting, by workflow id: the leader may have died before it saw them. */
  private standbyActivations = new Map<string, { at: number }>();
  /** Stage deletions seen while not acting, by the workflow id of each activation to tell. */
  private standby = new Map<string, { at: number; notice: StageDeletion }>();
  /**
   * Uids of the Stages whose deletion their activations were told of (or are being told): a deleting
   * Stage's every change does not tell them again. A uid leaves it when the telling failed, so the
   * next change or sweep tells them again; a takeover forgets it all and decides again.
   */
  private readonly told = new Set<string>();

  constructor(private readonly parts: StageDeletionParts) {}

  /** A takeover decides again for every Stage being deleted. */
  takeOver(): void {
    this.told.clear();
    this.decideDeleting();
  }

  /** Whether a VectorActivation deletion seen as a standby waits (by workflow id) to be handed over. */
  keeps(workflowId: string): boolean {
    return this.standbyActivations.has(workflowId);
  }

  /** A VectorActivation deleted: its workflow is told now, or by whoever serves its namespace next. */
  activationDeleted(activation: CachedActivation, acting: boolean): void {
    const decision = decideDeleted(activation, acting);
    const workflowId = workflowIdOf(activation);
    // A standby, or a shard that does not serve the namespace (yet): whoever serves it next hands it over.
    if (decision === 'later') this.standbyActivations.set(workflowId, { at: Date.now() });
    if (decision === 'signal') void this.parts.actions.signalDeleted(workflowId);
  }

  /** Notices kept while not acting, in the namespaces it acts in now, go to their workflows. */
  handOver(serves: (namespace: string) => boolean): void {
    const deletions = handOver(this.standbyActivations, Date.now(), serves);
    this.standbyActivations = deletions.keep;
    for (const [workflowId] of deletions.signal) void this.parts.actions.signalDeleted(workflowId);
    const notices = handOver(this.standby, Date.now(), serves);
    this.standby = notices.keep;
    for (const [workflowId, { notice }] of notices.signal)
      void this.parts.actions.signalStageDeleted(workflowId, notice);
  }

  /** A Stage deleted, or being deleted: its unfinished activations' workflows are told, once it worked. */
  changed(type: 'ADDED' | 'MODIFIED' | 'DELETED', stage: CachedStage): void {
    const decision = decideStageEvent(type, stage, this.parts.activations(), this.told);
    const uid = stage.metadata?.uid;
    // A Stage gone sends no more events: its telling runs to its end (or its attempts') below.
    if (uid && type === 'DELETED') this.told.delete(uid);
    if (!decision) return;
    const { notice, workflowIds } = decision;
    // A standby, or a shard that does not serve the namespace (yet): whoever serves it next tells them.
    if (!this.parts.informers.acting(notice.namespace)) {
      for (const workflowId of workflowIds) this.standby.set(workflowId, { at: Date.now(), notice });
      return;
    }
    if (workflowIds.length === 0) return;
    if (uid && type !== 'DELETED') this.told.add(uid);
    const deleted = `Stage ${notice.namespace}/${notice.stage} is ${notice.deleting ? 'being ' : ''}deleted`;
    this.parts.log(`${deleted}: telling ${workflowIds.length} unfinished activation(s)`, {
      namespace: notice.namespace,
      stage: notice.stage,
    });
    void this.tell(notice, workflowIds).then((told) => {
      if (!told && uid) this.told.delete(uid);
    });
  }

  /** Every cached Stage being deleted, decided again (after a takeover, and at each sweep for those not told yet). */
  decideDeleting(): void {
    const { informers } = this.parts;
    for (const ns of informers.namespaces()) {
      for (const stage of informers.list(ns, STAGE_KIND) as CachedStage[])
        if (stage.metadata?.deletionTimestamp) this.changed('MODIFIED', stage);
    }
  }

  /** Signals the notice to each workflow, again (a bounded number of times) to those Temporal could not be asked for; true once all were told. */
  private async tell(notice: StageDeletion, workflowIds: readonly string[]): Promise<boolean> {
    const { actions, stopped, log } = this.parts;
    let left = [...workflowIds];
    for (let attempt = 1; left.length > 0 && attempt <= STAGE_NOTICE_ATTEMPTS && !stopped(); attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, (attempt - 1) * 1_000).unref());
      const told = await Promise.all(left.map((workflowId) => actions.signalStageDeleted(workflowId, notice)));
      left = left.filter((_, i) => !told[i]);
    }
    if (left.length > 0 && !stopped()) {
      const message = `Stage ${notice.namespace}/${notice.stage} is deleted: ${left.length} workflow(s) could not be told; each finds it before its next route write`;
      log(message, { level: 'warn', namespace: notice.namespace });
    }
    return left.length === 0;
  }
}
