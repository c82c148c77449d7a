/**
 * The mailbox of what people and the watcher ask of a running activation: cancel and retry, a
 * progressive activation's approve, promote and abort, and the Stage's deletion. The workflow's
 * handlers (workflow.ts) put requests in; the run takes them out through methods, so every change
 * of this state is one of the methods below. Each token is handled once.
 */
import { answerRequest, stageLoss, type RequestAction, type StopCause } from '../../decisions/activation.js';
import { answerProgression, type ProgressionAction, type ProgressionView } from '../../decisions/progression.js';
import type { ActionRequest, ActivationProgress, StageDeletion } from '../../shared/activation.js';

export type Action = RequestAction | ProgressionAction;

/** A progression's answer accepted and not yet acted on. */
export interface ProgressionAnswer {
  action: ProgressionAction;
  request: ActionRequest;
}

export class ActivationRequests {
  /** The cancel asked (or the deletion seen) and not yet acted on by an ending attempt. */
  private cancelRequest: ActionRequest | undefined;
  private retryAsked = false;
  /** The workflow closes after this attempt instead of waiting for a retry (deleted). */
  private closeAsked = false;
  private pendingAnswer: ProgressionAnswer | undefined;
  /** Where a progression is, for its answers; set while one runs. */
  private progressionView: (() => ProgressionView) | undefined;
  private stageLostMessage: string | undefined;
  private readonly handledTokens = new Set<string>();
  /** The uid of the Stage the activation validated, once it did. */
  private stageUid: string | undefined;
  /** Stages the watcher saw deleted, by uid: one may be the activation's before it learns its uid. */
  private readonly deletedStages = new Map<string, StageDeletion>();

  constructor(private readonly progress: ActivationProgress) {}

  get cancelled(): boolean {
    return this.cancelRequest !== undefined;
  }

  /** The workflow closes after this attempt (deleted, or its Stage gone) instead of waiting for a retry. */
  get closing(): boolean {
    return this.closeAsked;
  }

  /** A retry was asked and no attempt took it yet. */
  get retryPending(): boolean {
    return this.retryAsked;
  }

  /** Why the activation's Stage is gone (decisions/activation.ts stageLoss), once it is known: it ends StageDeleted. */
  get stageLost(): string | undefined {
    return this.stageLostMessage;
  }

  /** An answer waits for the progression to act on it. */
  get answerWaiting(): boolean {
    return this.pendingAnswer !== undefined;
  }

  /** A new attempt starts: a progression of the attempt before is no more, and answers wait for this one's. */
  startAttempt(): void {
    this.progressionView = undefined;
    this.pendingAnswer = undefined;
  }

  /** A Failed or Cancelled attempt ended: a cancel heard during it was acted on. */
  attemptEnded(): void {
    this.cancelRequest = undefined;
  }

  /** Takes the retry asked, if one was (it starts one attempt). */
  takeRetry(): boolean {
    const asked = this.retryAsked;
    this.retryAsked = false;
    return asked;
  }

  /** A progression runs: its answers are judged by where it is. */
  followProgression(view: () => ProgressionView): void {
    this.progressionView = view;
  }

  /** Takes the progression's pending answer (it acts on it once). */
  take(): ProgressionAnswer | undefined {
    const answer = this.pendingAnswer;
    this.pendingAnswer = undefined;
    return answer;
  }

  /** The workflow itself was cancelled (Temporal UI/CLI) while a step ran: the step stops as on a cancel. */
  cancelledInTemporal(): void {
    this.cancelRequest ??= { reason: 'the workflow was cancelled in Temporal' };
  }

  /** The VectorActivation is gone (or going): no new step starts and the workflow closes. */
  deleted(): void {
    this.cancelRequest ??= { reason: 'the VectorActivation was deleted', deleted: true };
    this.closeAsked = true;
  }

  /** The uid of the Stage the activation validated, once it did. */
  get knownStageUid(): string | undefined {
    return this.stageUid;
  }

  /** The activation validated the Stage of this uid: a deletion of it seen before counts now. */
  knowStage(uid: string): void {
    this.stageUid = uid;
    const deletion = this.deletedStages.get(uid);
    if (deletion) this.stageDeleted(deletion);
  }

  /** The watcher saw a Stage deleted: the activation's, or one it may learn is its own. */
  stageDeletionSeen(deletion: StageDeletion): void {
    this.deletedStages.set(deletion.uid, deletion);
    if (deletion.uid === this.stageUid) this.stageDeleted(deletion);
  }

  /**
   * The activation's Stage is gone: no new step starts, what runs is cancelled, and the workflow
   * closes after this attempt (a retry would only find the Stage missing).
   */
  stageGone(message: string): void {
    this.stageLostMessage ??= message;
    this.cancelRequest ??= { reason: message };
    this.closeAsked = true;
  }

  /** What stopped the activation, when something did: a cancel (its reason), and the Stage's loss when that is why. */
  stopCause(): StopCause | undefined {
    if (!this.cancelRequest) return undefined;
    return {
      ...(this.cancelRequest.reason ? { reason: this.cancelRequest.reason } : {}),
      ...(this.stageLostMessage ? { stageLost: this.stageLostMessage } : {}),
    };
  }

  /** Whether a request would be accepted now, and if not why (an Update's validator). */
  decide(action: Action, request: ActionRequest) {
    if (request.token && this.handledTokens.has(`${action}:${request.token}`)) return { accepted: true as const };
    if (action === 'cancel' || action === 'retry') return answerRequest(action, this.progress.phase);
    const { phase } = this.progress;
    const view = this.progressionView?.() ?? { phase, ...(phase === 'InProgress' ? { progressive: false } : {}) };
    return answerProgression(action, {
      ...view,
      ...(this.pendingAnswer ? { pending: this.pendingAnswer.action } : {}),
    });
  }

  /** Takes an accepted request in, once per token; says what was done. */
  apply(action: Action, request: ActionRequest): string {
    const token = request.token ? `${action}:${request.token}` : undefined;
    if (token && this.handledTokens.has(token)) return `already handled (${request.token})`;
    if (token) this.handledTokens.add(token);
    if (action === 'retry') this.retryAsked = true;
    else if (action === 'cancel') {
      this.cancelRequest = request;
      this.closeAsked ||= request.deleted === true;
    } else this.pendingAnswer = { action, request };
    return `${action} accepted while ${this.progress.phase}${request.by ? ` (asked by ${request.by})` : ''}`;
  }

  /** A signal, which cannot answer: applied when it would be accepted, else dropped. */
  handle(action: Action, request: ActionRequest): void {
    if (this.decide(action, request).accepted) this.apply(action, request);
  }

  private stageDeleted({ namespace, stage, uid, deleting }: StageDeletion): void {
    this.stageGone(stageLoss(namespace, stage, deleting ? { uid, deleting } : undefined, uid)!.message);
  }
}
