/**
 * What people ask of a running activation: cancel and retry, and a progressive activation's
 * approve, promote and abort, as Updates (accepted, or refused with the reason) and as signals
 * (which cannot answer), each token handled once; and the progress query.
 */
import { setHandler } from '@temporalio/workflow';
import { answerRequest, stageLoss, type RequestAction, type StopCause } from '../decisions/activation.js';
import { answerProgression, type ProgressionAction, type ProgressionView } from '../decisions/progression.js';
import {
  abortSignal,
  abortUpdate,
  approveSignal,
  approveUpdate,
  cancelSignal,
  cancelUpdate,
  progressQuery,
  promoteSignal,
  promoteUpdate,
  retrySignal,
  retryUpdate,
  stageDeletedSignal,
  type ActionRequest,
  type ActivationProgress,
  type StageDeletion,
} from '../shared/activation.js';

type Action = RequestAction | ProgressionAction;

export class ActivationRequests {
  /** The cancel asked (or the deletion seen) and not yet acted on by an ending attempt. */
  cancel: ActionRequest | undefined;
  retry = false;
  /** The workflow closes after this attempt instead of waiting for a retry (deleted). */
  close = false;
  /** The progression's answer accepted and not yet acted on (the progression takes it). */
  answer: { action: ProgressionAction; request: ActionRequest } | undefined;
  /** Where a progression is, for its answers; set while one runs. */
  progression: (() => ProgressionView) | undefined;
  /** Why the activation's Stage is gone (decisions/activation.ts stageLoss), once it is known: it ends StageDeleted. */
  stageLost: string | undefined;
  private readonly seen = new Set<string>();
  /** The uid of the Stage the activation validated, once it did. */
  private stageUid: string | undefined;
  /** Stages the watcher saw deleted, by uid: one may be the activation's before it learns its uid. */
  private readonly deletedStages = new Map<string, StageDeletion>();

  constructor(private readonly progress: ActivationProgress) {
    setHandler(progressQuery, () => progress);
    setHandler(stageDeletedSignal, (deletion) => {
      this.deletedStages.set(deletion.uid, deletion);
      if (deletion.uid === this.stageUid) this.stageDeleted(deletion);
    });
    const pairs = [
      [cancelSignal, cancelUpdate, 'cancel'],
      [retrySignal, retryUpdate, 'retry'],
      [approveSignal, approveUpdate, 'approve'],
      [promoteSignal, promoteUpdate, 'promote'],
      [abortSignal, abortUpdate, 'abort'],
    ] as const;
    for (const [signal, update, action] of pairs) {
      setHandler(signal, (r) => void this.handle(action, r));
      setHandler(update, (r) => ({ outcome: 'Accepted' as const, message: this.apply(action, r) }), {
        validator: (r) => {
          const a = this.decide(action, r);
          if (!a.accepted) throw new Error(a.message);
        },
      });
    }
  }

  get cancelled(): boolean {
    return this.cancel !== undefined;
  }

  /** The VectorActivation is gone (or going): no new step starts and the workflow closes. */
  deleted(): void {
    this.cancel ??= { reason: 'the VectorActivation was deleted', deleted: true };
    this.close = true;
  }

  /** The activation validated the Stage of this uid: a deletion of it seen before counts now. */
  knowStage(uid: string): void {
    this.stageUid = uid;
    const deletion = this.deletedStages.get(uid);
    if (deletion) this.stageDeleted(deletion);
  }

  private stageDeleted({ namespace, stage, uid, deleting }: StageDeletion): void {
    this.stageGone(stageLoss(namespace, stage, deleting ? { uid, deleting } : undefined, uid)!.message);
  }

  /**
   * The activation's Stage is gone: no new step starts, what runs is cancelled, and the workflow
   * closes after this attempt (a retry would only find the Stage missing).
   */
  stageGone(message: string): void {
    this.stageLost ??= message;
    this.cancel ??= { reason: message };
    this.close = true;
  }

  /** What stopped the activation, when something did: a cancel (its reason), and the Stage's loss when that is why. */
  stopCause(): StopCause | undefined {
    if (!this.cancel) return undefined;
    return { ...(this.cancel.reason ? { reason: this.cancel.reason } : {}), ...(this.stageLost ? { stageLost: this.stageLost } : {}) };
  }

  /** Takes the progression's pending answer (it acts on it once). */
  take(): { action: ProgressionAction; request: ActionRequest } | undefined {
    const a = this.answer;
    this.answer = undefined;
    return a;
  }

  private decide(action: Action, r: ActionRequest) {
    if (r.token && this.seen.has(`${action}:${r.token}`)) return { accepted: true as const };
    if (action === 'cancel' || action === 'retry') return answerRequest(action, this.progress.phase);
    const view = this.progression?.() ?? { phase: this.progress.phase, ...(this.progress.phase === 'InProgress' ? { progressive: false } : {}) };
    return answerProgression(action, { ...view, ...(this.answer ? { pending: this.answer.action } : {}) });
  }

  private apply(action: Action, r: ActionRequest): string {
    if (r.token && this.seen.has(`${action}:${r.token}`)) return `already handled (${r.token})`;
    if (r.token) this.seen.add(`${action}:${r.token}`);
    if (action === 'retry') this.retry = true;
    else if (action === 'cancel') {
      this.cancel = r;
      this.close ||= r.deleted === true;
    } else this.answer = { action, request: r };
    return `${action} accepted while ${this.progress.phase}${r.by ? ` (asked by ${r.by})` : ''}`;
  }

  private handle(action: Action, r: ActionRequest): void {
    if (this.decide(action, r).accepted) this.apply(action, r);
  }
}
